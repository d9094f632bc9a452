package schedule

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// upstreamWatched has s (two items, hourly) and d after it requiring
// done, notifying page.
const upstreamWatched = `
[tasks.t]
max_attempts = 1
[tasks.summary]
[tasks.page]
[[schedule]]
name = "s"
cron = "0 * * * *"
task = "t"
for_each = [ { n = 1 }, { n = 2 } ]
[[schedule]]
name = "d"
after = "s"
require = "done"
task = "summary"
notify = ["page"]
`

// TestUpstreamFailedAlarm: an item of s dying skips d's instant, which
// raises one upstream alarm on d and notifies once; a restarted beat
// raises nothing again; once the item is retried and succeeds, d runs and
// its success resolves the incident with one notice.
func TestUpstreamFailedAlarm(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		ctx := context.Background()
		cfg := mustParse(t, upstreamWatched)
		first := startBeat(t, q, cfg, clk)
		first.advance(time.Hour)
		at := t0.Add(time.Hour)
		runNext(t, q, clk, "t", queue.OutcomeDone)
		dead := runNext(t, q, clk, "t", queue.OutcomeDead)
		first.advance(time.Second)
		if got, want := alarmList(t, q), []string{label("", at) + " upstream"}; !equal(got, want) {
			t.Fatalf("alarms = %v, want %v", got, want)
		}
		ns := notifications(t, q)
		if len(ns) != 1 || ns[0].Schedule != "d" || ns[0].Kind != "upstream" || ns[0].Notice != "first" ||
			ns[0].JobID != dead.ID || ns[0].Instant != at.Format(time.RFC3339) ||
			ns[0].LastError != "upstream failed: 1 of 2 items did not succeed (dead: "+dead.Item+")" {
			t.Fatalf("notifications = %+v, want one upstream notice of d naming %s", ns, dead.Item)
		}

		first.stop()
		second := startBeat(t, q, cfg, clk)
		second.advance(time.Second)
		second.advance(10 * time.Minute)
		if got := alarmList(t, q); len(got) != 1 {
			t.Errorf("alarms after a restart = %v, want the one", got)
		}
		if ns := notifications(t, q); len(ns) != 1 {
			t.Errorf("notifications after a restart = %+v, want the one", ns)
		}

		// The notice ends; the item is retried and succeeds; d runs.
		runNext(t, q, clk, "page", queue.OutcomeDone)
		if err := q.Retry(ctx, dead.ID); err != nil {
			t.Fatal(err)
		}
		runNext(t, q, clk, "t", queue.OutcomeDone)
		clk.Advance(time.Second)
		runNext(t, q, clk, "summary", queue.OutcomeDone)
		second.advance(time.Second)
		ns = notifications(t, q)
		if len(ns) != 2 || ns[1].Notice != "resolved" || ns[1].IncidentKind != "upstream" {
			t.Fatalf("notifications after d ran = %+v, want the first and one resolution", ns)
		}
		ins, err := q.Incidents(ctx, "d", 10)
		if err != nil || len(ins) != 1 || ins[0].Open || ins[0].Kind != store.AlarmUpstream {
			t.Errorf("Incidents of d = %+v, %v; want one resolved upstream incident", ins, err)
		}
		second.advance(10 * time.Minute)
		if ns := notifications(t, q); len(ns) != 2 {
			t.Errorf("notifications later = %d, want 2", len(ns))
		}
	})
}

// TestUpstreamFailedAlarmManualRun: a manual run of s whose item dies
// skips d under the run's item and raises one upstream alarm on d naming
// the run; a second run that fails gets an alarm of its own; once the
// first run's item is retried and succeeds, d runs for that run. (As for
// every manual run, its success does not resolve the incident: the next
// instant's does, see docs/alarms.md.)
func TestUpstreamFailedAlarmManualRun(t *testing.T) {
	t.Parallel()
	onEngines(t, func(t *testing.T, q *queue.Client, clk *clock.Fake) {
		ctx := context.Background()
		cfg := mustParse(t, upstreamWatched)
		b := startBeat(t, q, cfg, clk)
		at := clk.Now()
		if _, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Key: "k1", Now: at}); err != nil {
			t.Fatal(err)
		}
		runNext(t, q, clk, "t", queue.OutcomeDone)
		dead := runNext(t, q, clk, "t", queue.OutcomeDead)
		b.advance(time.Second)
		if sk, err := q.SkipAt(ctx, "d", store.ManualRunItem("k1"), at); err != nil || sk.Item != store.ManualRunItem("k1") || sk.Reason != store.SkipUpstreamFailed {
			t.Fatalf("skip of d for the manual run = %+v, %v; want upstream failed", sk, err)
		}
		if got, want := alarmList(t, q), []string{label(store.ManualRunItem("k1"), at) + " upstream"}; !equal(got, want) {
			t.Fatalf("alarms = %v, want %v", got, want)
		}
		ns := notifications(t, q)
		if len(ns) != 1 || ns[0].Schedule != "d" || ns[0].Kind != "upstream" || ns[0].Notice != "first" || ns[0].JobID != dead.ID ||
			ns[0].LastError != "upstream failed: 1 of 2 items of manual run k1 did not succeed (dead: "+dead.Item+")" {
			t.Fatalf("notifications = %+v, want one upstream notice of d naming manual run k1 and %s", ns, dead.Item)
		}

		// A second manual run fails: an alarm of its own.
		at2 := clk.Now()
		if _, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Key: "k2", Now: at2}); err != nil {
			t.Fatal(err)
		}
		runNext(t, q, clk, "t", queue.OutcomeDead)
		runNext(t, q, clk, "t", queue.OutcomeDead)
		b.advance(time.Second)
		as, err := q.Alarms(ctx, "d", 10)
		if err != nil || len(as) != 2 || as[0].Item != store.ManualRunItem("k2") || as[0].Key == as[1].Key ||
			as[0].Error != "upstream failed: 2 of 2 items of manual run k2 did not succeed (dead: n=1, n=2)" {
			t.Fatalf("alarms of d = %+v, %v; want the second run's, naming manual run k2", as, err)
		}

		// The first run's dead item is retried and succeeds: d runs.
		runNext(t, q, clk, "page", queue.OutcomeDone)
		if err := q.Retry(ctx, dead.ID); err != nil {
			t.Fatal(err)
		}
		runNext(t, q, clk, "t", queue.OutcomeDone)
		clk.Advance(time.Second)
		ran := runNext(t, q, clk, "summary", queue.OutcomeDone)
		if ran.Key != "d||manual|k1" || !ran.ScheduledAt.IsZero() {
			t.Fatalf("job of d = %+v; want the manual run k1's", ran)
		}
		b.advance(time.Second)
		if as, err := q.Alarms(ctx, "d", 10); err != nil || len(as) != 2 {
			t.Fatalf("alarms of d after it ran = %+v, %v; want the two", as, err)
		}
	})
}
