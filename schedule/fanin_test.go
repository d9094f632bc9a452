package schedule

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestBeatFanIn: the schedule after another gets one job per upstream
// instant, once every item's job of that instant has ended, standing for
// the upstream instant and naming it; with require = "done" a failed item
// skips it instead, with the reason upstream failed.
func TestBeatFanIn(t *testing.T) {
	t.Parallel()
	for _, require := range []string{"ended", "done"} {
		t.Run(require, func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			ctx := context.Background()
			r := startBeat(t, q, mustParse(t, `
[tasks.t]
[tasks.summary]
[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
for_each = [ { n = 1 }, { n = 2 } ]
[[schedule]]
name = "d"
after = "s"
require = "`+require+`"
task = "summary"
payload = { to = "finance" }
`), clk)
			r.advance(time.Minute)
			at := t0.Truncate(time.Minute).Add(time.Minute)
			js, err := q.ScheduleJobs(ctx, "s", 10)
			if err != nil || len(js) != 2 {
				t.Fatalf("jobs of s = %v, %v; want 2", js, err)
			}
			if _, err := q.RequestCancel(ctx, js[0].ID, "test"); err != nil {
				t.Fatal(err)
			}
			if got, _ := q.ScheduleJobs(ctx, "d", 10); len(got) != 0 {
				t.Fatalf("jobs of d before the last item ended: %v", got)
			}
			if _, err := q.RequestCancel(ctx, js[1].ID, "test"); err != nil {
				t.Fatal(err)
			}
			f, err := q.FanIn(ctx, "fanin|"+DedupKey("d", "", at))
			if err != nil || f.Ended != 2 || f.Expected != 2 {
				t.Fatalf("FanIn = %+v, %v", f, err)
			}
			got, err := q.ScheduleJobs(ctx, "d", 10)
			if err != nil {
				t.Fatal(err)
			}
			if require == "done" {
				sk, err := q.SkipAt(ctx, "d", "", at)
				if len(got) != 0 || err != nil || sk.Reason != store.SkipUpstreamFailed {
					t.Fatalf("jobs of d = %v; skip = %+v, %v; want none, skipped as upstream failed", got, sk, err)
				}
				return
			}
			if len(got) != 1 || !got[0].ScheduledAt.Equal(at) || got[0].Type != "summary" {
				t.Fatalf("jobs of d = %+v; want one summary standing for %v", got, at)
			}
			var p struct {
				To, Upstream, Instant string
				Cancelled             []string
			}
			if err := json.Unmarshal(got[0].Payload, &p); err != nil || p.To != "finance" || p.Upstream != "s" ||
				p.Instant != at.Format(time.RFC3339) || !slices.Equal(p.Cancelled, []string{"n=1", "n=2"}) {
				t.Fatalf("payload = %s, %v", got[0].Payload, err)
			}
		})
	}
}

// chainConfig has s (two items) with d and e after it, e requiring done,
// and f after d.
const chainConfig = `
[tasks.t]
[tasks.summary]
[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
for_each = [ { n = 1 }, { n = 2 } ]
[[schedule]]
name = "d"
after = "s"
task = "summary"
[[schedule]]
name = "e"
after = "s"
require = "done"
task = "summary"
[[schedule]]
name = "f"
after = "d"
task = "summary"
`

// cancelAll cancels the pending jobs of schedule name.
func cancelAll(t *testing.T, q *queue.Client, name string) int {
	t.Helper()
	js, err := q.ScheduleJobs(context.Background(), name, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range js {
		if _, err := q.RequestCancel(context.Background(), j.ID, "test"); err != nil {
			t.Fatal(err)
		}
	}
	return len(js)
}

// TestBeatFanInChainAndSiblings: two schedules after one each get their
// job or skip per upstream instant, by their own require; the schedule
// after a downstream runs once that downstream's job ended, standing for
// the same instant.
func TestBeatFanInChainAndSiblings(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	ctx := context.Background()
	r := startBeat(t, q, mustParse(t, chainConfig), clk)
	r.advance(time.Minute)
	at := t0.Truncate(time.Minute).Add(time.Minute)
	if n := cancelAll(t, q, "s"); n != 2 {
		t.Fatalf("jobs of s = %d, want 2", n)
	}
	d, err := q.ScheduleJobs(ctx, "d", 10)
	if err != nil || len(d) != 1 || !d[0].ScheduledAt.Equal(at) {
		t.Fatalf("jobs of d = %+v, %v; want one at %v", d, err, at)
	}
	if sk, err := q.SkipAt(ctx, "e", "", at); err != nil || sk.Reason != store.SkipUpstreamFailed {
		t.Fatalf("skip of e = %+v, %v", sk, err)
	}
	if got, _ := q.ScheduleJobs(ctx, "f", 10); len(got) != 0 {
		t.Fatalf("jobs of f before d ended: %v", got)
	}
	if fi, err := q.FanIn(ctx, "fanin|"+DedupKey("f", "", at)); err != nil || fi.Expected != 1 || fi.State != store.FanInWaiting {
		t.Fatalf("FanIn of f = %+v, %v; want waiting for d's job", fi, err)
	}
	cancelAll(t, q, "d")
	f, err := q.ScheduleJobs(ctx, "f", 10)
	if err != nil || len(f) != 1 || !f[0].ScheduledAt.Equal(at) {
		t.Fatalf("jobs of f = %+v, %v; want one at %v", f, err, at)
	}
	var p struct{ Upstream string }
	if err := json.Unmarshal(f[0].Payload, &p); err != nil || p.Upstream != "d" {
		t.Fatalf("payload of f = %s, %v", f[0].Payload, err)
	}
}

// TestTriggerAndBackfillMakeFanIns: a manual run and a backfill of a
// schedule others follow commit their fan-ins with their jobs; a second
// backfill of the same instant adds nothing. Their items cancelled, e
// (require = "done") is skipped for the backfilled instant and, under the
// run's item, for the manual run.
func TestTriggerAndBackfillMakeFanIns(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	ctx := context.Background()
	cfg := mustParse(t, chainConfig)
	triggered := clk.Now()
	if _, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Key: "k", Now: triggered}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d", "e"} {
		if store.ManualFanInKey(name, "k") != "fanin|"+manualKey(name, "", "k") {
			t.Fatalf("ManualFanInKey(%s, k) = %q, want fanin|%s", name, store.ManualFanInKey(name, "k"), manualKey(name, "", "k"))
		}
		f, err := q.FanIn(ctx, store.ManualFanInKey(name, "k"))
		if err != nil || f.Expected != 2 || f.State != store.FanInWaiting {
			t.Fatalf("FanIn of the manual run for %s = %+v, %v", name, f, err)
		}
	}
	at := t0.Truncate(time.Hour).Add(-time.Hour)
	for range 2 {
		res, err := Backfill(ctx, q, cfg, "s", at, at)
		if err != nil || len(res) != 2 {
			t.Fatalf("Backfill = %+v, %v", res, err)
		}
		if f, err := q.FanIn(ctx, "fanin|"+DedupKey("e", "", at)); err != nil || f.Expected != 2 {
			t.Fatalf("FanIn of the backfilled instant = %+v, %v", f, err)
		}
	}
	cancelAll(t, q, "s")
	d, err := q.ScheduleJobs(ctx, "d", 10)
	if err != nil || len(d) != 2 {
		t.Fatalf("jobs of d = %+v, %v; want the manual run's and the instant's", d, err)
	}
	var manual int
	for _, j := range d {
		if j.ScheduledAt.IsZero() {
			manual++
		} else if !j.ScheduledAt.Equal(at) {
			t.Errorf("job of d stands for %v, want %v", j.ScheduledAt, at)
		}
	}
	if manual != 1 {
		t.Fatalf("jobs of d for the manual run: %d, want 1", manual)
	}
	for _, sk := range []struct {
		item string
		at   time.Time
	}{{"", at}, {store.ManualRunItem("k"), triggered}} {
		if got, err := q.SkipAt(ctx, "e", sk.item, sk.at); err != nil || got.Item != sk.item || got.Reason != store.SkipUpstreamFailed {
			t.Errorf("SkipAt(e, %q, %v) = %+v, %v; want upstream failed", sk.item, sk.at, got, err)
		}
	}
}
