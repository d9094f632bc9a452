package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// onEngines runs fn on a fresh SQLite file and on a PostgreSQL schema of
// its own (skipped without SCHEDULER_TEST_POSTGRES), each with a fake
// clock at t0 that the store decides with as it is.
func onEngines(t *testing.T, fn func(t *testing.T, q *queue.Client, clk *clock.Fake)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		q, clk := newTestQueue(t)
		fn(t, q, clk)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewFake(t0)
		s, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Config{Clock: clk, LocalClock: true})
		if err != nil {
			t.Fatalf("postgres.Open: %v", err)
		}
		q, _ := queue.New(s, queue.Config{})
		t.Cleanup(func() { q.Close() })
		fn(t, q, clk)
	})
}

// alarmRecorder collects the AlarmRaised events of a beat, as
// "schedule kind".
type alarmRecorder struct {
	mu  sync.Mutex
	got []string
}

// record is a BeatConfig.EventFunc.
func (r *alarmRecorder) record(e Event) {
	a, ok := e.(AlarmRaised)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, a.Schedule+" "+string(a.Kind))
}

func (r *alarmRecorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// alarmList returns the stored alarms, oldest first, as "item@15:04 kind".
func alarmList(t *testing.T, q *queue.Client) []string {
	t.Helper()
	as, err := q.Alarms(context.Background(), "", 1000)
	if err != nil {
		t.Fatalf("Alarms: %v", err)
	}
	out := make([]string, len(as))
	for i, a := range as {
		out[len(as)-1-i] = label(a.Item, a.ScheduledAt) + " " + string(a.Kind)
	}
	return out
}

// notifications returns the payloads of the notification jobs, oldest
// first.
func notifications(t *testing.T, q *queue.Client) []config.AlarmPayload {
	t.Helper()
	js, err := q.List(context.Background(), queue.Filter{KeyPrefix: store.NotifyKeyPrefix, Limit: 1000})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := make([]config.AlarmPayload, len(js))
	for i, j := range js {
		if j.Schedule != "" {
			t.Errorf("notification %s belongs to schedule %q", j.Key, j.Schedule)
		}
		if err := json.Unmarshal(j.Payload, &out[len(js)-1-i]); err != nil {
			t.Fatalf("payload of %s: %v", j.Key, err)
		}
	}
	return out
}

// runNext claims the next ready job of typ at the clock's time and records
// outcome for it, as a pool would; it returns the job.
func runNext(t *testing.T, q *queue.Client, clk *clock.Fake, typ string, outcome queue.Outcome) *queue.Job {
	t.Helper()
	ctx := context.Background()
	now := clk.Now()
	res, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "test", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{typ}}})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim %s: %d jobs, %v", typ, len(res.Claimed), err)
	}
	j := res.Claimed[0]
	if outcome == "" {
		return j // left running
	}
	finish(t, q, clk, j, outcome)
	return j
}

// finish records outcome for the running job j at the clock's time.
func finish(t *testing.T, q *queue.Client, clk *clock.Fake, j *queue.Job, outcome queue.Outcome) {
	t.Helper()
	now := clk.Now()
	r := store.Result{Job: j, Worker: "test/w0", Outcome: outcome, Error: "exit status 1", Started: j.StartedAt, Finished: now, RetryAt: now}
	if outcome == queue.OutcomeDone {
		r.Error = ""
	}
	res, err := q.Engine().CommitPoolTx(context.Background(), store.PoolTx{Owner: "test", Now: now, Results: []store.Result{r}})
	if err != nil || !res.Fenced[0] {
		t.Fatalf("finish %s: %+v, %v", j.Key, res, err)
	}
}

const fanOutWatched = `
[tasks.t]
max_attempts = 1
[tasks.page]
[[schedule]]
name = "s"
cron = "30 12 * * *"
task = "t"
for_each = [{id = "a"}, {id = "b"}]
start_within = "5m"
deadline = "10m"
notify = ["page"]
`

// TestAlarmsLateDeadMissedRecovered walks one instant of a fan-out through
// every alarm of a run: item a runs on time and raises nothing; item b
// starts late (late), fails for good (dead), so misses its deadline
// (missed), and once retried and done raises one recovered that closes the
// three.
func TestAlarmsLateDeadMissedRecovered(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		rec := &alarmRecorder{}
		var logs syncBuffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		r := startBeatWith(t, q, mustParse(t, fanOutWatched), BeatConfig{Clock: clk, EventFunc: rec.record, Logger: log})
		instant := t0.Add(30 * time.Minute)
		if d, ok := r.b.Deadline("s"); !ok || !d.Equal(instant.Add(10*time.Minute)) {
			t.Errorf("Deadline before the instant = %v, %v; want %v", d, ok, instant.Add(10*time.Minute))
		}
		idle := r.advance(30 * time.Minute)
		if want := instant.Add(5 * time.Minute); !idle.next.Equal(want) {
			t.Errorf("after the instant the beat waits for %v, want its start_within %v", idle.next, want)
		}
		clk.Advance(time.Minute)
		runNext(t, q, clk, "t", queue.OutcomeDone) // item a, on time
		r.advance(4 * time.Minute)
		if got, want := alarmList(t, q), []string{"id=b@12:30:00 late"}; !equal(got, want) {
			t.Fatalf("alarms at start_within = %v, want %v", got, want)
		}
		clk.Advance(time.Minute)
		runNext(t, q, clk, "t", queue.OutcomeDead) // item b
		// A pass after the dead job: the clock's move may have started one
		// before it.
		idle = r.advance(time.Second)
		if want := instant.Add(10 * time.Minute); !idle.next.Equal(want) {
			t.Errorf("the beat waits for %v, want the deadline %v", idle.next, want)
		}
		r.advance(4*time.Minute - time.Second)
		if got, want := alarmList(t, q), []string{"id=b@12:30:00 late", "id=b@12:30:00 dead", "id=b@12:30:00 missed"}; !equal(got, want) {
			t.Fatalf("alarms at the deadline = %v, want %v", got, want)
		}
		if d, ok := r.b.Deadline("s"); !ok || !d.Equal(instant.Add(10*time.Minute)) {
			t.Errorf("Deadline after the miss = %v, %v; want the missed one, %v", d, ok, instant.Add(10*time.Minute))
		}
		b, err := q.JobByKey(context.Background(), DedupKey("s", "id=b", instant))
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Retry(context.Background(), b.ID); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
		runNext(t, q, clk, "t", queue.OutcomeDone)
		r.advance(time.Second)
		want := []string{"id=b@12:30:00 late", "id=b@12:30:00 dead", "id=b@12:30:00 missed", "id=b@12:30:00 recovered"}
		if got := alarmList(t, q); !equal(got, want) {
			t.Fatalf("alarms = %v, want %v", got, want)
		}
		// The resolutions wait for the incidents' notices: page-ops must
		// not hear of a resolution before the incident.
		if ns := notifications(t, q); len(ns) != 3 {
			t.Fatalf("notifications with the notices pending = %+v, want the 3 first notices", ns)
		}
		runNext(t, q, clk, "page", queue.OutcomeDone)
		runNext(t, q, clk, "page", queue.OutcomeDead) // ended, though it failed
		r.advance(time.Second)
		if ns := notifications(t, q); len(ns) != 5 || ns[3].Notice != "resolved" || ns[4].Notice != "resolved" {
			t.Fatalf("notifications with the missed notice pending = %+v, want the late and dead incidents resolved alone", ns)
		}
		job := runNext(t, q, clk, "page", "") // running
		r.advance(time.Second)
		if ns := notifications(t, q); len(ns) != 5 {
			t.Fatalf("notifications with a notice running = %+v, want no third resolution yet", ns)
		}
		finish(t, q, clk, job, queue.OutcomeDone)
		r.advance(time.Second)
		if got, want := rec.calls(), []string{"s late", "s dead", "s missed", "s recovered"}; !equal(got, want) {
			t.Errorf("AlarmRaised events = %v, want %v", got, want)
		}
		if d, ok := r.b.Deadline("s"); !ok || !d.Equal(instant.Add(24*time.Hour+10*time.Minute)) {
			t.Errorf("Deadline after recovery = %v, %v; want the next instant's", d, ok)
		}
		ns := notifications(t, q)
		if len(ns) != 6 {
			t.Fatalf("notifications = %+v, want 3 first notices and 3 resolutions", ns)
		}
		missed := ns[2]
		wantMissed := config.AlarmPayload{Schedule: "s", Item: "id=b", Instant: "2026-03-01T12:30:00Z", Kind: "missed",
			Deadline: "2026-03-01T12:40:00Z", LastSuccess: "2026-03-01T12:31:00Z", JobID: b.ID, LastError: "exit status 1",
			Incident: missed.Incident, IncidentKind: "missed", Notice: "first", Count: 1, First: "2026-03-01T12:40:00Z", Last: "2026-03-01T12:40:00Z"}
		if missed != wantMissed || missed.Incident == 0 {
			t.Errorf("missed payload = %+v, want %+v", missed, wantMissed)
		}
		if ns[0].Deadline != "2026-03-01T12:35:00Z" {
			t.Errorf("late payload's deadline = %q, want the start_within 12:35", ns[0].Deadline)
		}
		resolved := map[string]bool{}
		for _, n := range ns[3:] {
			if n.Kind != "recovered" || n.Notice != "resolved" || n.Count != 1 || n.LastSuccess != "2026-03-01T12:41:00Z" {
				t.Errorf("resolution = %+v", n)
			}
			resolved[n.IncidentKind] = true
		}
		if len(resolved) != 3 {
			t.Errorf("resolutions of %v, want late, dead and missed", resolved)
		}
		for line, level := range map[string]string{"kind=late incident=": "WARN", "kind=dead incident=": "ERROR", "kind=missed incident=": "ERROR"} {
			if !strings.Contains(logs.String(), `level=`+level+` msg="incident opened" component=beat schedule=s `+line) {
				t.Errorf("no %s line for the %s incident in:\n%s", level, line, logs.String())
			}
		}
		for _, line := range []string{`level=INFO msg="alarm recovered" component=beat schedule=s item="id=b"`, `level=INFO msg="incident resolved" component=beat schedule=s kind=dead`} {
			if !strings.Contains(logs.String(), line) {
				t.Errorf("no line %s in:\n%s", line, logs.String())
			}
		}
		if strings.Contains(logs.String(), "level=ERROR msg=\"alarm raised\"") {
			t.Errorf("alarm raised at ERROR in:\n%s", logs.String())
		}
		// A notification that goes dead raises nothing: no loop.
		runNext(t, q, clk, "page", queue.OutcomeDead)
		r.advance(time.Minute)
		if got := alarmList(t, q); len(got) != 4 {
			t.Errorf("a dead notification raised alarms: %v", got)
		}
	})
}

const hourlyWatched = `
[tasks.t]
[tasks.page]
[[schedule]]
name = "s"
cron = "0 * * * *"
task = "t"
deadline = "30m"
notify = ["page"]
`

// TestAlarmsAcrossDowntime stops the beat before an instant and starts
// another after its deadline: the first pass of the new beat
// materialises the missed instant and raises missed at once, with one
// notification; a third beat raises nothing again.
func TestAlarmsAcrossDowntime(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		cfg := mustParse(t, hourlyWatched)
		first := startBeat(t, q, cfg, clk)
		first.stop()
		clk.Set(t0.Add(time.Hour + 45*time.Minute)) // 13:00 passed, and its deadline 13:30
		second := startBeat(t, q, cfg, clk)
		if got, want := alarmList(t, q), []string{"13:00:00 missed"}; !equal(got, want) {
			t.Fatalf("alarms after the downtime = %v, want %v", got, want)
		}
		if ns := notifications(t, q); len(ns) != 1 || ns[0].Kind != "missed" || ns[0].LastSuccess != "" {
			t.Errorf("notifications = %+v, want one missed, no last success", ns)
		}
		second.stop()
		third := startBeat(t, q, cfg, clk)
		third.advance(time.Minute)
		if ns := notifications(t, q); len(ns) != 1 {
			t.Errorf("notifications after a restart = %+v, want the one", ns)
		}
		// The late run succeeds: recovered; the incident resolves once,
		// after its first notice ended.
		runNext(t, q, clk, "t", queue.OutcomeDone)
		third.advance(time.Minute)
		if got, want := alarmList(t, q), []string{"13:00:00 missed", "13:00:00 recovered"}; !equal(got, want) {
			t.Errorf("alarms = %v, want %v", got, want)
		}
		if ns := notifications(t, q); len(ns) != 1 {
			t.Errorf("notifications before the first notice ran = %+v, want it alone", ns)
		}
		runNext(t, q, clk, "page", queue.OutcomeDone)
		third.advance(time.Minute)
		third.advance(time.Minute)
		if ns := notifications(t, q); len(ns) != 2 || ns[1].Notice != "resolved" || ns[1].Incident != ns[0].Incident {
			t.Errorf("notifications = %+v, want the first notice and its resolution", ns)
		}
	})
}

const misfireWatched = `
[tasks.t]
[tasks.page]
[[schedule]]
name = "s"
cron = "0 * * * *"
task = "t"
catch_up = "none"
notify = ["page"]
`

// TestAlarmsMisfire raises one misfire alarm for the instants one step of
// the beat skipped after downtime, counting them.
func TestAlarmsMisfire(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		cfg := mustParse(t, misfireWatched)
		startBeat(t, q, cfg, clk).stop()
		clk.Set(t0.Add(3*time.Hour + 10*time.Minute)) // 13:00, 14:00 and 15:00 missed
		r := startBeat(t, q, cfg, clk)
		r.advance(time.Minute)
		if got, want := alarmList(t, q), []string{"15:00:00 misfire"}; !equal(got, want) {
			t.Fatalf("alarms = %v, want %v", got, want)
		}
		ns := notifications(t, q)
		if len(ns) != 1 || ns[0].Skipped != 3 || ns[0].Deadline != "" {
			t.Errorf("notifications = %+v, want one misfire of 3 skips", ns)
		}
	})
}

// TestAlarmsOnlyForWatchedSchedules: a schedule without start_within,
// deadline or notify raises nothing, not even for a dead job.
func TestAlarmsOnlyForWatchedSchedules(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, "[tasks.t]\nmax_attempts = 1\n"+strings.TrimPrefix(hourly, "\n[tasks.t]\n")), clk)
	r.advance(time.Hour)
	runNext(t, q, clk, "t", queue.OutcomeDead)
	r.advance(time.Hour)
	if got := alarmList(t, q); len(got) != 0 {
		t.Errorf("alarms = %v, want none", got)
	}
	if _, ok := r.b.Deadline("s"); ok {
		t.Error("a schedule without a deadline has one")
	}
}

// TestAlarmsJudgeTheFinishNotTheState: a run that succeeded after its
// deadline, while no beat was judging, still missed it.
func TestAlarmsJudgeTheFinishNotTheState(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		cfg := mustParse(t, hourlyWatched)
		r := startBeat(t, q, cfg, clk)
		r.advance(time.Hour)
		r.stop()
		clk.Advance(40 * time.Minute) // past 13:30
		runNext(t, q, clk, "t", queue.OutcomeDone)
		r = startBeat(t, q, cfg, clk)
		r.advance(time.Minute)
		if ns := notifications(t, q); len(ns) != 1 || ns[0].Kind != "missed" {
			t.Errorf("notifications before the first notice ran = %+v, want the missed one", ns)
		}
		runNext(t, q, clk, "page", queue.OutcomeDone)
		r.advance(time.Minute)
		if got, want := alarmList(t, q), []string{"13:00:00 missed", "13:00:00 recovered"}; !equal(got, want) {
			t.Errorf("alarms = %v, want %v", got, want)
		}
		if ns := notifications(t, q); len(ns) != 2 || ns[1].Notice != "resolved" {
			t.Errorf("notifications = %+v, want the missed one and its resolution", ns)
		}
	})
}

// TestAlarmsFirstJudgementCoversTheDowntime: a daemon that created the
// cursor but stopped before it judged anything (no marks) still gets the
// instant its downtime passed judged by the next one.
func TestAlarmsFirstJudgementCoversTheDowntime(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		if _, err := q.Advance(context.Background(), store.Advance{Schedule: "s", To: t0}); err != nil {
			t.Fatal(err)
		}
		clk.Set(t0.Add(time.Hour + 45*time.Minute))
		startBeat(t, q, mustParse(t, hourlyWatched), clk)
		if got, want := alarmList(t, q), []string{"13:00:00 missed"}; !equal(got, want) {
			t.Errorf("alarms = %v, want %v", got, want)
		}
	})
}

// TestAlarmsTwoBeatsRaiseOnce: two beats judging the same instants (two
// daemons on one database) raise each alarm once, counted on one incident
// per kind, which notifies once.
func TestAlarmsTwoBeatsRaiseOnce(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		cfg := mustParse(t, fanOutWatched)
		a, b := &alarmRecorder{}, &alarmRecorder{}
		ra := startBeatWith(t, q, cfg, BeatConfig{Clock: clk, EventFunc: a.record})
		rb := startBeatWith(t, q, cfg, BeatConfig{Clock: clk, EventFunc: b.record})
		clk.Set(t0.Add(45 * time.Minute)) // past the instant's start_within and deadline
		ra.b.Wake()
		rb.b.Wake()
		ra.settle()
		rb.settle()
		ra.advance(time.Second)
		rb.advance(0)
		want := []string{"id=a@12:30:00 late", "id=b@12:30:00 late", "id=a@12:30:00 missed", "id=b@12:30:00 missed"}
		got := alarmList(t, q)
		sortLabels(got)
		sortLabels(want)
		if !equal(got, want) {
			t.Errorf("alarms = %v, want %v", got, want)
		}
		if n := len(a.calls()) + len(b.calls()); n != 4 {
			t.Errorf("AlarmRaised reported %d times by the two beats (%v, %v), want 4", n, a.calls(), b.calls())
		}
		if ns := notifications(t, q); len(ns) != 2 {
			t.Errorf("notifications = %d, want 2: the late and the missed incidents'", len(ns))
		}
	})
}

// BenchmarkAlarmsPass measures a pass of the beat, alarms judged included,
// over 1,000 hourly schedules in the minutes between their instants (the
// usual pass: nothing due), without alarm keys ("plain") and with a
// deadline and a notify task each ("watched"): what judging the alarms
// adds to a pass that finds nothing to do.
func BenchmarkAlarmsPass(b *testing.B) {
	const n = 1000
	for _, mode := range []string{"plain", "watched"} {
		var sb strings.Builder
		sb.WriteString("[tasks.t]\n[tasks.page]\n")
		for i := range n {
			fmt.Fprintf(&sb, "[[schedule]]\nname = \"s%04d\"\ncron = \"0 * * * *\"\ntask = \"t\"\n", i)
			if mode == "watched" {
				sb.WriteString("deadline = \"30m\"\nnotify = [\"page\"]\n")
			}
		}
		cfg := mustParse(b, sb.String())
		b.Run(mode, func(b *testing.B) {
			q, clk := newTestQueue(b)
			beat, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			pass := func() {
				now := clk.Now()
				if _, err := beat.pass(ctx, now); err != nil {
					b.Fatal(err)
				}
				if _, err := beat.alarmPass(ctx, now); err != nil {
					b.Fatal(err)
				}
			}
			pass() // creates the cursors and the marks
			for b.Loop() {
				clk.Advance(time.Second) // t0 is on the hour: an hour of passes with nothing due
				pass()
			}
		})
	}
}

// TestJobFinishedWakesTheBeat: a dead job of a watched schedule, then its
// success after a retry, are judged by the pass JobFinished asks for, at
// the same instant of the clock, not at the beat's next wake (the
// deadline, half an hour on); the incident's resolution, which waits for
// its first notice, by the pass that the notice's end asks for.
func TestJobFinishedWakesTheBeat(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		r := startBeatWith(t, q, mustParse(t, hourlyWatched), BeatConfig{Clock: clk})
		r.advance(time.Hour) // the 13:00 instant
		j := runNext(t, q, clk, "t", queue.OutcomeDead)
		// state is the alarms, then the notices sent.
		state := func() []string {
			out := alarmList(t, q)
			for _, n := range notifications(t, q) {
				out = append(out, "notice "+n.Notice)
			}
			return out
		}
		judged := func(ended func(), want ...string) {
			t.Helper()
			// A pass that the clock's move started may report first,
			// before the job ended: then the next one judges it.
			for range 3 {
				ended()
				r.settle()
				if got := state(); equal(got, want) {
					return
				}
			}
			t.Fatalf("alarms and notices = %v, want %v", state(), want)
		}
		ended := func(f queue.Finished) func() { return func() { r.b.JobFinished(f) } }
		judged(ended(queue.Finished{Type: "t", Schedule: "s", Outcome: queue.OutcomeDead}), "13:00:00 dead", "notice first")
		if err := q.Retry(context.Background(), j.ID); err != nil {
			t.Fatal(err)
		}
		runNext(t, q, clk, "t", queue.OutcomeDone)
		// The resolution waits for the incident's first notice, whose end
		// wakes the beat.
		judged(ended(queue.Finished{Type: "t", Schedule: "s", Outcome: queue.OutcomeDone}), "13:00:00 dead", "13:00:00 recovered", "notice first")
		runNext(t, q, clk, "page", queue.OutcomeDone)
		judged(ended(queue.Finished{Type: "page", Notification: true, Outcome: queue.OutcomeDone}),
			"13:00:00 dead", "13:00:00 recovered", "notice first", "notice resolved")
	})
}

// TestAlarmsMaskTheJobsSecrets: an alarm about a job carries its error
// masked by the task's redact and redact_output as the config has them
// now, in the alarm, its notification and its log line, though the job
// stored its error unmasked (by a daemon whose task did not redact yet).
func TestAlarmsMaskTheJobsSecrets(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		var logs syncBuffer
		r := startBeatWith(t, q, mustParse(t, `
[tasks.t]
max_attempts = 1
redact = ["token"]
redact_output = ["pw=\\S+"]
[tasks.page]
[[schedule]]
name = "s"
cron = "30 12 * * *"
task = "t"
payload = { token = "tok\"<SECRET>" }
deadline = "10m"
notify = ["page"]
`), BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		r.advance(30 * time.Minute)
		clk.Advance(time.Minute)
		j := runNext(t, q, clk, "t", "")
		now := clk.Now()
		res := store.Result{Job: j, Worker: "test/w0", Outcome: queue.OutcomeDead, Started: j.StartedAt, Finished: now,
			Error: fmt.Sprintf("command sh: exit code 3; output: %q pw=hunter2", j.Payload)}
		if tr, err := q.Engine().CommitPoolTx(context.Background(), store.PoolTx{Owner: "test", Now: now, Results: []store.Result{res}}); err != nil || !tr.Fenced[0] {
			t.Fatalf("finish: %+v, %v", tr, err)
		}
		r.advance(time.Second)
		r.advance(10 * time.Minute)
		as, err := q.Alarms(context.Background(), "", 10)
		if err != nil || len(as) != 2 {
			t.Fatalf("alarms %+v, %v; want dead and missed", as, err)
		}
		for _, a := range as {
			if strings.Contains(a.Error+string(a.Detail), "SECRET") || strings.Contains(a.Error+string(a.Detail), "hunter2") || !strings.Contains(a.Error, "[redacted]") {
				t.Errorf("%s alarm: error %q, detail %s; want the secrets masked", a.Kind, a.Error, a.Detail)
			}
		}
		for _, n := range notifications(t, q) {
			if strings.Contains(n.LastError, "SECRET") || strings.Contains(n.LastError, "hunter2") {
				t.Errorf("%s notification's last error %q holds a secret", n.Kind, n.LastError)
			}
		}
		if strings.Contains(logs.String(), "SECRET") || strings.Contains(logs.String(), "hunter2") {
			t.Errorf("the log holds a secret:\n%s", logs.String())
		}
	})
}
