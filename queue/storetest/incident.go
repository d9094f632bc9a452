package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// deadAlarm returns a dead alarm of schedule s's job id at at.
func deadAlarm(s string, id int64, at time.Time) store.NewAlarm {
	return store.NewAlarm{Schedule: s, ScheduledAt: at, Kind: store.AlarmDead, JobID: id, Error: "exit 1", At: at}
}

// pageNotice is a NoticeFunc that notifies task page of each notice, its
// payload the notice's kind and count.
func pageNotice(n store.Notice) ([]store.NewJob, error) {
	p, err := json.Marshal(map[string]any{"notice": n.Kind, "count": n.Incident.Count})
	return []store.NewJob{{Type: pageTask(n.Incident), Payload: p}}, err
}

// pageTask is the notify task of incident in's pages, one per schedule and
// kind, so that a test finishes the pages of one incident alone.
func pageTask(in store.Incident) string { return "page-" + in.Schedule + "-" + string(in.Kind) }

// pages returns the page jobs of incident id, by notice kind.
func pages(t *testing.T, q store.Engine, id int64) map[store.NoticeKind]int {
	t.Helper()
	js, err := q.List(context.Background(), store.Filter{KeyPrefix: store.NoticeKeyPrefix(id), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := map[store.NoticeKind]int{}
	for _, j := range js {
		var p struct{ Notice store.NoticeKind }
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if j.AlarmKey != store.IncidentKey(id) {
			t.Errorf("notice %s names %q, want %q", j.Key, j.AlarmKey, store.IncidentKey(id))
		}
		out[p.Notice]++
	}
	return out
}

func commitAlarms(t *testing.T, q store.Engine, b store.AlarmBatch) store.AlarmOutcome {
	t.Helper()
	if b.NoticeFunc == nil {
		b.NoticeFunc = pageNotice
	}
	out, err := q.CommitAlarms(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testIncidentGroupsAlarms: the alarms of a schedule and kind count on one
// open incident, whose first occurrence alone notifies; an alarm raised
// again counts nothing; a success resolves it once, after its notice
// ended; the next occurrence opens a new one.
func testIncidentGroupsAlarms(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	var alarms []store.NewAlarm
	for k := range 3 {
		alarms = append(alarms, deadAlarm("s", int64(k+1), t0.Add(time.Duration(k)*time.Minute)))
	}
	out := commitAlarms(t, q, store.AlarmBatch{Alarms: alarms[:1]})
	if len(out.Occurrences) != 1 || !out.Occurrences[0].Opened || len(out.Notices) != 1 || out.Notices[0].Kind != store.NoticeFirst {
		t.Fatalf("first alarm: %+v, want an incident opened and its first notice", out)
	}
	id := out.Occurrences[0].Incident.ID
	out = commitAlarms(t, q, store.AlarmBatch{Alarms: append(alarms, store.NewAlarm{Schedule: "s", ScheduledAt: t0, Kind: store.AlarmLate, JobID: 1, At: t0})})
	if len(out.Raised) != 3 || len(out.Occurrences) != 3 || out.Occurrences[0].Opened || out.Occurrences[1].Incident.ID != id ||
		!out.Occurrences[2].Opened || out.Occurrences[2].Incident.ID == id {
		t.Fatalf("again with two more and a late one: %+v, want two counted, a late incident opened", out)
	}
	ins, err := q.Incidents(context.Background(), "s", 10)
	if err != nil || len(ins) != 2 {
		t.Fatalf("Incidents = %+v, %v; want the dead and the late", ins, err)
	}
	dead := ins[0]
	if dead.Kind != store.AlarmDead {
		dead = ins[1]
	}
	if dead.ID != id || dead.Count != 3 || !dead.FirstAt.Equal(t0) || !dead.LastAt.Equal(t0.Add(2*time.Minute)) || !dead.Open {
		t.Errorf("dead incident = %+v, want 3 occurrences from t0 to t0+2m, open", dead)
	}
	if got := pages(t, q, id); got[store.NoticeFirst] != 1 || len(got) != 1 {
		t.Errorf("pages = %v, want one first notice", got)
	}
	// A success before the last occurrence resolves nothing; one after
	// waits for the first notice to end.
	success := map[string]time.Time{"s": t0.Add(3 * time.Minute)}
	if out := commitAlarms(t, q, store.AlarmBatch{Successes: map[string]time.Time{"s": t0.Add(-time.Second)}}); len(out.Notices) != 0 || out.Waiting {
		t.Errorf("an older success: %+v, want nothing", out)
	}
	if out := commitAlarms(t, q, store.AlarmBatch{Successes: success}); len(out.Notices) != 0 || !out.Waiting {
		t.Errorf("a success while the notices run: %+v, want it waiting", out)
	}
	for _, in := range ins {
		finishJob(t, q, clk.Now(), store.NotifyKey(store.IncidentKey(in.ID)+":first", pageTask(in)), store.OutcomeDone, "")
	}
	out = commitAlarms(t, q, store.AlarmBatch{Successes: success})
	if len(out.Notices) != 2 || out.Notices[0].Kind != store.NoticeResolved || out.Notices[0].Incident.Open || out.Waiting {
		t.Fatalf("the success: %+v, want both resolved", out)
	}
	if out := commitAlarms(t, q, store.AlarmBatch{Successes: success}); len(out.Notices) != 0 {
		t.Errorf("the success again: %+v, want nothing", out)
	}
	if got := pages(t, q, id); got[store.NoticeFirst] != 1 || got[store.NoticeResolved] != 1 || len(got) != 2 {
		t.Errorf("pages = %v, want one first notice and one resolution", got)
	}
	out = commitAlarms(t, q, store.AlarmBatch{Alarms: []store.NewAlarm{deadAlarm("s", 9, t0.Add(time.Hour))}})
	if len(out.Occurrences) != 1 || !out.Occurrences[0].Opened || out.Occurrences[0].Incident.ID == id {
		t.Errorf("a dead alarm after the resolution: %+v, want a new incident", out)
	}
}

// testIncidentRemindersAndAcknowledge: a reminder is sent once for its
// count of reminders; an acknowledged incident gets none; acknowledging
// twice keeps the first, a resolved or unknown incident is refused.
func testIncidentRemindersAndAcknowledge(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	out := commitAlarms(t, q, store.AlarmBatch{Alarms: []store.NewAlarm{deadAlarm("s", 1, t0)}})
	id := out.Occurrences[0].Incident.ID
	clk.Advance(time.Hour)
	for range 2 {
		if out := commitAlarms(t, q, store.AlarmBatch{Reminders: []store.Reminder{{ID: id}}}); len(out.Notices) > 1 {
			t.Fatalf("reminder: %+v", out)
		}
	}
	open, err := q.OpenIncidents(ctx, 10)
	if err != nil || len(open) != 1 || open[0].Reminders != 1 || !open[0].NotifiedAt.Equal(clk.Now()) || !open[0].Notifying {
		t.Fatalf("OpenIncidents = %+v, %v; want one reminder sent now, notifying", open, err)
	}
	in, acked, err := q.Acknowledge(ctx, id, "ann")
	if err != nil || !acked || in.AckedBy != "ann" || !in.AckedAt.Equal(clk.Now()) {
		t.Fatalf("Acknowledge = %+v, %v, %v", in, acked, err)
	}
	clk.Advance(time.Minute)
	if in, acked, err := q.Acknowledge(ctx, id, "bob"); err != nil || acked || in.AckedBy != "ann" {
		t.Errorf("Acknowledge again = %+v, %v, %v; want ann's kept", in, acked, err)
	}
	if out := commitAlarms(t, q, store.AlarmBatch{Reminders: []store.Reminder{{ID: id, Reminders: 1}}}); len(out.Notices) != 0 {
		t.Errorf("reminder of an acknowledged incident: %+v", out)
	}
	if got := pages(t, q, id); got[store.NoticeFirst] != 1 || got[store.NoticeReminder] != 1 {
		t.Errorf("pages = %v, want a first notice and one reminder", got)
	}
	if _, _, err := q.Acknowledge(ctx, id+100, "ann"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Acknowledge of no incident: %v, want ErrNotFound", err)
	}
	out = commitAlarms(t, q, store.AlarmBatch{Alarms: []store.NewAlarm{deadAlarm("r", 2, t0)}})
	rin := out.Occurrences[0].Incident
	rid := rin.ID
	finishJob(t, q, clk.Now(), store.NotifyKey(store.IncidentKey(rid)+":first", pageTask(rin)), store.OutcomeDone, "")
	commitAlarms(t, q, store.AlarmBatch{Successes: map[string]time.Time{"r": clk.Now()}})
	if _, _, err := q.Acknowledge(ctx, rid, "ann"); !errors.Is(err, store.ErrIncidentResolved) {
		t.Errorf("Acknowledge of a resolved incident: %v, want ErrIncidentResolved", err)
	}
}

// testIncidentSilence: a silenced schedule's incidents are recorded and
// counted but notify nobody until the silence ends or is lifted.
func testIncidentSilence(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	if err := q.Silence(ctx, "s", t0.Add(time.Hour), "ann"); err != nil {
		t.Fatal(err)
	}
	ss, err := q.Silences(ctx)
	if err != nil || len(ss) != 1 || ss["s"].By != "ann" || !ss["s"].Until.Equal(t0.Add(time.Hour)) {
		t.Fatalf("Silences = %+v, %v", ss, err)
	}
	out := commitAlarms(t, q, store.AlarmBatch{Alarms: []store.NewAlarm{deadAlarm("s", 1, t0), deadAlarm("s", 2, t0.Add(time.Minute))}})
	if len(out.Notices) != 1 || !out.Notices[0].Silenced || out.Occurrences[1].Incident.Count != 2 {
		t.Fatalf("silenced: %+v, want the first notice silenced, 2 counted", out)
	}
	id := out.Occurrences[0].Incident.ID
	if got := pages(t, q, id); len(got) != 0 {
		t.Errorf("pages while silenced = %v, want none", got)
	}
	clk.Advance(2 * time.Hour) // the silence ended
	if ss, err := q.Silences(ctx); err != nil || len(ss) != 0 {
		t.Errorf("Silences after its end = %+v, %v", ss, err)
	}
	if out := commitAlarms(t, q, store.AlarmBatch{Reminders: []store.Reminder{{ID: id}}}); len(out.Notices) != 1 || out.Notices[0].Silenced {
		t.Errorf("reminder after the silence: %+v, want it sent", out)
	}
	if err := q.Silence(ctx, "s", clk.Now().Add(time.Hour), "ann"); err != nil {
		t.Fatal(err)
	}
	if err := q.Silence(ctx, "s", time.Time{}, "bob"); err != nil {
		t.Fatal(err)
	}
	if ss, err := q.Silences(ctx); err != nil || len(ss) != 0 {
		t.Errorf("Silences after lifting = %+v, %v", ss, err)
	}
}

// testIncidentConcurrentOnce: two engines raising the same and different
// dead alarms of one schedule at once count each alarm once on one
// incident, which notifies once; racing successes resolve it once.
func testIncidentConcurrentOnce(t *testing.T, su *suite) {
	t.Parallel()
	a, b, clk := su.openTwo(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []store.Engine{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 30 {
				// Even instants are shared, odd ones each engine's own.
				n := k
				if k%2 == 1 {
					n = 1000*(i+1) + k
				}
				at := t0.Add(time.Duration(n) * time.Second)
				if _, err := s.CommitAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{deadAlarm("s", int64(n+1), at)},
					NoticeFunc: pageNotice}); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	ins, err := a.Incidents(ctx, "", 10)
	if err != nil || len(ins) != 1 || ins[0].Count != 45 {
		t.Fatalf("Incidents = %+v, %v; want one of 45 occurrences", ins, err)
	}
	id := ins[0].ID
	if got := pages(t, a, id); got[store.NoticeFirst] != 1 || len(got) != 1 {
		t.Fatalf("pages = %v, want one first notice", got)
	}
	finishJob(t, a, clk.Now(), store.NotifyKey(store.IncidentKey(id)+":first", pageTask(ins[0])), store.OutcomeDone, "")
	resolved := make([]int, 2)
	for i, s := range []store.Engine{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := s.CommitAlarms(ctx, store.AlarmBatch{Successes: map[string]time.Time{"s": t0.Add(time.Hour)},
				Reminders: []store.Reminder{{ID: id}}, NoticeFunc: pageNotice})
			errs[i] = err
			resolved[i] = len(out.Notices)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := pages(t, a, id); got[store.NoticeResolved] != 1 || got[store.NoticeReminder] > 1 {
		t.Errorf("pages after racing successes = %v (notices %v), want one resolution", got, resolved)
	}
}
