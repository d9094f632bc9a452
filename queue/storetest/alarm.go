package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// missed returns a missed alarm of s's item at at with notifications for
// tasks.
func missedAlarm(s, item string, at time.Time, jobID int64, tasks ...string) store.NewAlarm {
	a := store.NewAlarm{Schedule: s, Item: item, ScheduledAt: at, Kind: store.AlarmMissed, JobID: jobID,
		Error: "boom", Detail: json.RawMessage(`{"kind":"missed"}`)}
	key := store.AlarmKey(s, item, at, jobID, store.AlarmMissed)
	for _, task := range tasks {
		a.Notify = append(a.Notify, store.NewJob{Key: store.NotifyKey(key, task), Type: task, Payload: a.Detail})
	}
	return a
}

func testRaiseAlarmsOnce(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	i1 := t0.Add(time.Hour)
	a := missedAlarm("s", "x", i1, 7, "page", "chat")
	mark := store.AlarmMark{Schedule: "s", Late: i1, Missed: i1, Misfire: i1, Dead: t0}
	raised, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{a}, Marks: []store.AlarmMark{mark}})
	if err != nil {
		t.Fatal(err)
	}
	if len(raised) != 1 || raised[0].Key != "s|x|"+fmt.Sprint(i1.UnixMilli())+"|missed" || !raised[0].Open || raised[0].JobID != 7 {
		t.Fatalf("raised = %+v, want the missed alarm, open", raised)
	}
	for _, task := range []string{"page", "chat"} {
		j := mustJob(t, q, store.NotifyKey(raised[0].Key, task))
		if j.Type != task || string(j.Payload) != `{"kind":"missed"}` || j.Schedule != "" {
			t.Errorf("notification for %s = %+v", task, j)
		}
	}
	// Raised again, by a restarted evaluation: nothing new, no job.
	a.Notify = append(a.Notify, store.NewJob{Key: store.NotifyKey(raised[0].Key, "late-task"), Type: "late-task"})
	again, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{a}})
	if err != nil || len(again) != 0 {
		t.Fatalf("second raise = %+v, %v; want nothing", again, err)
	}
	if j, err := q.JobByKey(ctx, store.NotifyKey(raised[0].Key, "late-task")); err == nil {
		t.Errorf("a known alarm enqueued %+v", j)
	}
	// Marks only move forward.
	clk.Advance(time.Minute)
	back := store.AlarmMark{Schedule: "s", Late: t0, Missed: i1.Add(time.Hour), Misfire: t0, Dead: t0.Add(time.Minute)}
	if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Marks: []store.AlarmMark{back}}); err != nil {
		t.Fatal(err)
	}
	marks, err := q.AlarmMarks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := store.AlarmMark{Schedule: "s", Late: i1, Missed: i1.Add(time.Hour), Misfire: i1, Dead: t0.Add(time.Minute)}
	if got := marks["s"]; !got.Late.Equal(want.Late) || !got.Missed.Equal(want.Missed) || !got.Misfire.Equal(want.Misfire) || !got.Dead.Equal(want.Dead) {
		t.Errorf("marks = %+v, want %+v", got, want)
	}
	// A recovered alarm closes the alarm it follows.
	open, err := q.OpenAlarms(ctx, 10)
	if err != nil || len(open) != 1 || open[0].ID != raised[0].ID || open[0].JobState != "" {
		t.Fatalf("OpenAlarms = %+v, %v; want the missed alarm, its job unknown", open, err)
	}
	rec := store.NewAlarm{Schedule: "s", Item: "x", ScheduledAt: i1, Kind: store.AlarmRecovered, JobID: 7, Resolves: []int64{open[0].ID}}
	if got, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{rec}}); err != nil || len(got) != 1 || got[0].Open {
		t.Fatalf("recovered = %+v, %v", got, err)
	}
	if open, err := q.OpenAlarms(ctx, 10); err != nil || len(open) != 0 {
		t.Errorf("OpenAlarms after recovery = %+v, %v; want none", open, err)
	}
	list, err := q.Alarms(ctx, "", 10)
	if err != nil || len(list) != 2 || list[0].Kind != store.AlarmRecovered || list[1].Kind != store.AlarmMissed || list[1].Open {
		t.Errorf("Alarms = %+v, %v; want recovered then missed, closed", list, err)
	}
	if list, err := q.Alarms(ctx, "other", 10); err != nil || len(list) != 0 {
		t.Errorf("Alarms(other) = %+v, %v", list, err)
	}
	// A bad alarm writes nothing.
	bad := []store.NewAlarm{missedAlarm("s", "y", i1, 8), {Schedule: "s", Kind: "odd", ScheduledAt: i1}}
	if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: bad}); err == nil {
		t.Error("an alarm of an unknown kind was raised")
	}
	if list, _ := q.Alarms(ctx, "s", 10); len(list) != 2 {
		t.Errorf("a failed batch wrote %d alarms", len(list)-2)
	}
}

func testRaiseAlarmsConcurrentOnce(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	raised := make([]int, 2)
	errs := make([]error, 2)
	for i, s := range []interface {
		RaiseAlarms(context.Context, store.AlarmBatch) ([]store.Alarm, error)
	}{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 20 {
				at := t0.Add(time.Duration(k) * time.Minute)
				r, err := s.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{missedAlarm("s", "", at, int64(k+1), "page")}})
				if err != nil {
					errs[i] = err
					return
				}
				raised[i] += len(r)
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if raised[0]+raised[1] != 20 {
		t.Errorf("raised %d + %d alarms, want 20 in all", raised[0], raised[1])
	}
	jobs, err := a.List(ctx, store.Filter{KeyPrefix: store.NotifyKeyPrefix, Limit: 100})
	if err != nil || len(jobs) != 20 {
		t.Errorf("notification jobs = %d, %v; want 20", len(jobs), err)
	}
}

func testAlarmReads(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	i1, i2, i3 := t0.Add(time.Minute), t0.Add(2*time.Minute), t0.Add(3*time.Minute)
	var jobs []store.NewJob
	for _, at := range []time.Time{i1, i2, i3} {
		for _, item := range []string{"b", "a"} {
			runAt := at
			if at != i1 {
				runAt = t0.Add(time.Hour) // not ready while i1's jobs are claimed
			}
			jobs = append(jobs, store.NewJob{Type: "t-" + item, Key: fmt.Sprintf("s|%s|%d", item, at.Unix()), Schedule: "s", Item: item, ScheduledAt: at, RunAt: runAt})
		}
	}
	jobs = append(jobs, store.NewJob{Type: "t-o", Key: "other", Schedule: "o", ScheduledAt: i1, RunAt: i1})
	if _, err := q.Advance(ctx, store.Advance{Schedule: "s", To: i3, Jobs: jobs,
		Skips: []store.Skip{{Schedule: "s", ScheduledAt: t0, Reason: store.SkipMisfire}, {Schedule: "s", ScheduledAt: i2, Reason: store.SkipOverlap}}}); err != nil {
		t.Fatal(err)
	}
	if last, err := q.LastSuccess(ctx, "s"); err != nil || !last.IsZero() {
		t.Errorf("LastSuccess before any = %v, %v", last, err)
	}
	clk.Set(i1.Add(10 * time.Second))
	// The item a of i1 fails once, then succeeds.
	finishJob(t, q, clk.Now(), fmt.Sprintf("s|a|%d", i1.Unix()), store.OutcomeRetry, "first")
	clk.Advance(time.Minute)
	finishJob(t, q, clk.Now(), fmt.Sprintf("s|a|%d", i1.Unix()), store.OutcomeDone, "")
	clk.Advance(time.Second)
	finishJob(t, q, clk.Now(), fmt.Sprintf("s|b|%d", i1.Unix()), store.OutcomeDead, "gone")

	got, err := q.InstantJobs(ctx, "s", t0, i2, 10)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, j := range got {
		keys = append(keys, fmt.Sprintf("%s@%d", j.Item, j.ScheduledAt.Sub(t0)/time.Minute))
	}
	if fmt.Sprint(keys) != "[a@1 b@1 a@2 b@2]" {
		t.Fatalf("InstantJobs(t0, i2] = %v, want [a@1 b@1 a@2 b@2]", keys)
	}
	if a := got[0]; a.State != store.StateDone || !a.FirstStartedAt.Equal(i1.Add(10*time.Second)) || !a.StartedAt.After(a.FirstStartedAt) {
		t.Errorf("item a of i1: state %s, first start %v, latest %v; want done, first at %v", a.State, a.FirstStartedAt, a.StartedAt, i1.Add(10*time.Second))
	}
	if b := got[3]; !b.FirstStartedAt.IsZero() {
		t.Errorf("item b of i2 never started, first start %v", b.FirstStartedAt)
	}
	if got, err := q.InstantJobs(ctx, "s", i1, i3, 3); err != nil || len(got) != 3 || !got[0].ScheduledAt.Equal(i2) {
		t.Errorf("InstantJobs(i1, i3], 3 = %d jobs from %v, %v", len(got), got, err)
	}
	if last, err := q.LastSuccess(ctx, "s"); err != nil || !last.Equal(i1.Add(70*time.Second)) {
		t.Errorf("LastSuccess = %v, %v; want %v", last, err, i1.Add(70*time.Second))
	}

	// A dead job of no schedule (a notification) is not one of them.
	mustEnqueue(t, q, store.NewJob{Type: "t-n", Key: "loose"})
	finishJob(t, q, clk.Now(), "loose", store.OutcomeDead, "gone")
	dead, err := q.DeadJobs(ctx, t0, 10)
	if err != nil || len(dead) != 1 || dead[0].Item != "b" || dead[0].LastError != "gone" {
		t.Fatalf("DeadJobs = %+v, %v; want item b of i1", dead, err)
	}
	if dead, err := q.DeadJobs(ctx, dead[0].FinishedAt, 10); err != nil || len(dead) != 0 {
		t.Errorf("DeadJobs after its finish = %+v, %v", dead, err)
	}

	skips, err := q.SkipsBetween(ctx, "s", store.SkipMisfire, t0.Add(-time.Minute), i3, 10)
	if err != nil || len(skips) != 1 || !skips[0].ScheduledAt.Equal(t0) {
		t.Errorf("SkipsBetween misfire = %+v, %v; want the one at t0", skips, err)
	}
	if skips, err := q.SkipsBetween(ctx, "s", store.SkipMisfire, t0, i3, 10); err != nil || len(skips) != 0 {
		t.Errorf("SkipsBetween after t0 = %+v, %v", skips, err)
	}

	// The open alarm of a job reports the job as it stands.
	if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{missedAlarm("s", "a", i1, got[0].ID)}}); err != nil {
		t.Fatal(err)
	}
	open, err := q.OpenAlarms(ctx, 10)
	if err != nil || len(open) != 1 || open[0].JobState != store.StateDone || !open[0].JobFinishedAt.Equal(i1.Add(70*time.Second)) {
		t.Errorf("OpenAlarms = %+v, %v; want the job done at %v", open, err, i1.Add(70*time.Second))
	}
}

// testPurgeKeepsOpenAlarms: Purge deletes the closed alarms raised before
// its time, the recovered ones with the alarms they closed, and keeps an
// open alarm however old, and the alarms raised since.
func testPurgeKeepsOpenAlarms(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	i1, i2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	raised, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{
		missedAlarm("s", "x", i1, 7), missedAlarm("s", "x", i2, 8),
	}})
	if err != nil || len(raised) != 2 {
		t.Fatalf("RaiseAlarms = %+v, %v", raised, err)
	}
	closed := raised[1]
	rec := store.NewAlarm{Schedule: "s", Item: "x", ScheduledAt: i2, Kind: store.AlarmRecovered, JobID: 8, Resolves: []int64{closed.ID}}
	if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{rec}}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	late := missedAlarm("s", "x", i2.Add(time.Hour), 9)
	late.Kind, late.Key = store.AlarmMisfire, ""
	if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{late}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := purge(ctx, q, clk.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	list, err := q.Alarms(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range list {
		got = append(got, fmt.Sprintf("%s %d", a.Kind, a.JobID))
	}
	if want := []string{"misfire 9", "missed 7"}; !slices.Equal(got, want) {
		t.Errorf("alarms after Purge = %v, want %v: the open one and the one raised since", got, want)
	}
}

// testOpenAlarmsSeeTheirNotifications: an open alarm is Notifying while a
// notification job of its own is pending or running, and no longer once
// each ended, done or dead; the notification of another alarm whose key
// starts with its key does not count.
func testOpenAlarmsSeeTheirNotifications(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	i1 := t0.Add(time.Hour)
	a := missedAlarm("s", "x", i1, 7, "page", "chat")
	// An item that makes b's key start with a's key and "|".
	long := "x|" + fmt.Sprint(i1.UnixMilli()) + "|missed|y"
	b := missedAlarm("s", long, i1, 8, "page")
	if !strings.HasPrefix(b.Notify[0].Key, store.NotifyKey(store.AlarmKey("s", "x", i1, 7, store.AlarmMissed), "")) {
		t.Fatalf("%s does not extend a's key", b.Notify[0].Key)
	}
	raised, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{a, b}})
	if err != nil || len(raised) != 2 {
		t.Fatalf("raise = %+v, %v", raised, err)
	}
	notifying := func() map[string]bool {
		t.Helper()
		open, err := q.OpenAlarms(ctx, 10)
		if err != nil || len(open) != 2 {
			t.Fatalf("OpenAlarms = %+v, %v", open, err)
		}
		return map[string]bool{open[0].Item: open[0].Notifying, open[1].Item: open[1].Notifying}
	}
	if got := notifying(); !got["x"] || !got[long] {
		t.Fatalf("Notifying with every notification pending = %v, want both", got)
	}
	aKey := raised[0].Key
	finishJob(t, q, clk.Now(), store.NotifyKey(aKey, "chat"), store.OutcomeDead, "no route")
	running := claim(t, q, "test", clk.Now(), time.Minute, 2, "page")
	if len(running) != 2 {
		t.Fatalf("claimed %d page jobs, want 2", len(running))
	}
	if got := notifying(); !got["x"] || !got[long] {
		t.Errorf("Notifying with the pages running = %v, want both", got)
	}
	for _, j := range running {
		if j.Key != store.NotifyKey(aKey, "page") {
			continue
		}
		r := store.Result{Job: j, Worker: "test/w0", Outcome: store.OutcomeDone, Started: clk.Now(), Finished: clk.Now()}
		if res, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "test", Now: clk.Now(), Results: []store.Result{r}}); err != nil || !res.Fenced[0] {
			t.Fatalf("finish %s: %+v, %v", j.Key, res, err)
		}
	}
	if got := notifying(); got["x"] || !got[long] {
		t.Errorf("Notifying with a's notifications ended, b's running = %v, want b alone", got)
	}
}

// testNotificationsNameTheirAlarm: the notification jobs of an alarm carry
// its key, as the job, as a claim returns it, and to OpenAlarms, which
// counts a job by it and not by its dedup key: a job whose key looks like
// a notification's but that names no alarm is none.
func testNotificationsNameTheirAlarm(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	a := missedAlarm("s", "x", t0.Add(time.Hour), 7, "page")
	a.Notify[0].AlarmKey = ""
	raised, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{a}})
	if err != nil || len(raised) != 1 {
		t.Fatalf("raise = %+v, %v", raised, err)
	}
	key := raised[0].Key
	if j := mustJob(t, q, store.NotifyKey(key, "page")); j.AlarmKey != key {
		t.Errorf("notification job's AlarmKey = %q, want %q", j.AlarmKey, key)
	}
	mustEnqueue(t, q, store.NewJob{Type: "page", Key: store.NotifyKey(key, "chat")}) // no alarm named
	js := claim(t, q, "test", clk.Now(), time.Minute, 10, "page")
	if len(js) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(js))
	}
	for _, j := range js {
		if want := map[bool]string{true: key}[j.Key == store.NotifyKey(key, "page")]; j.AlarmKey != want {
			t.Errorf("claimed %s: AlarmKey %q, want %q", j.Key, j.AlarmKey, want)
		}
	}
	for _, j := range js {
		if j.AlarmKey == "" {
			continue
		}
		r := store.Result{Job: j, Worker: "test/w0", Outcome: store.OutcomeDone, Started: clk.Now(), Finished: clk.Now()}
		if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "test", Now: clk.Now(), Results: []store.Result{r}}); err != nil {
			t.Fatal(err)
		}
	}
	open, err := q.OpenAlarms(ctx, 10)
	if err != nil || len(open) != 1 || open[0].Notifying {
		t.Errorf("OpenAlarms = %+v, %v; want the alarm, its one notification ended", open, err)
	}
}
