package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// manualRun enqueues the jobs of a manual run run of schedule "up" (items
// a and b, of type "m") with fan-ins of "summary" and "audit" after it,
// both requiring done, as package schedule does; and returns its jobs.
func manualRun(t *testing.T, q store.Engine, run string) []store.Enqueued {
	t.Helper()
	jobs := []store.NewJob{
		{Type: "m", Key: "up|a|manual|" + run, Schedule: "up", Item: "a", MaxAttempts: 1},
		{Type: "m", Key: "up|b|manual|" + run, Schedule: "up", Item: "b", MaxAttempts: 1},
	}
	var specs []store.FanInSpec
	for _, down := range []string{"summary", "audit"} {
		specs = append(specs, store.FanInSpec{Key: store.ManualFanInKey(down, run), Require: store.RequireDone, Run: run,
			Then: store.NewJob{Type: "then", Key: down + "||manual|" + run, Schedule: down}})
	}
	res, err := q.EnqueueWithFanIns(context.Background(), jobs, []store.AdvanceFanIn{{Specs: specs, N: len(jobs)}})
	if err != nil || len(res) != 2 {
		t.Fatalf("EnqueueWithFanIns(%s) = %+v, %v", run, res, err)
	}
	return res
}

// testFanInManualRunSkip: a fan-in of a manual run (its job stands for no
// instant) whose members did not all end done records a skip under the
// item ManualRunItem(run) at its creation, for each schedule after the
// run; two manual runs and an instant at the same time each get their own
// skip; FanInJobs reads the run's members, also through a fan-in sharing
// them; once the failed member is retried and ends done, the job runs.
func testFanInManualRunSkip(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	at := clk.Now()
	k1 := manualRun(t, q, "k1")
	manualRun(t, q, "k2")
	_, err := q.EnqueueFanIn(ctx, store.NewFanIn{Key: "instant", Require: store.RequireDone,
		Then: store.NewJob{Type: "then", Schedule: "summary", ScheduledAt: at},
		Jobs: []store.NewJob{{Type: "m", Key: "up|a|instant", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	finishAll(t, q, clk.Now(), func(j *store.Job) store.Outcome {
		if j.Item == "a" || j.Key == "up|a|instant" {
			return store.OutcomeDead
		}
		return store.OutcomeDone
	})
	for _, down := range []string{"summary", "audit"} {
		for _, run := range []string{"k1", "k2"} {
			fanInState(t, q, store.ManualFanInKey(down, run), store.FanInSkipped, 2)
			sk, err := q.SkipAt(ctx, down, store.ManualRunItem(run), at)
			// SkipAt falls back to a skip of item "": the instant's.
			if err != nil || sk.Item != store.ManualRunItem(run) || sk.Reason != store.SkipUpstreamFailed || !sk.RecordedAt.Equal(clk.Now()) {
				t.Fatalf("SkipAt(%s, %s) = %+v, %v; want the run's, upstream failed, recorded at %v", down, store.ManualRunItem(run), sk, err, clk.Now())
			}
			if got, ok := store.ManualRunOf(sk.Item); !ok || got != run {
				t.Errorf("ManualRunOf(%q) = %q, %v; want %q", sk.Item, got, ok, run)
			}
		}
	}
	if sk, err := q.SkipAt(ctx, "summary", "", at); err != nil || sk.Reason != store.SkipUpstreamFailed {
		t.Fatalf("SkipAt(summary, instant) = %+v, %v; want upstream failed", sk, err)
	}
	if skips, err := q.ListSkips(ctx, "summary", 10); err != nil || len(skips) != 3 {
		t.Fatalf("ListSkips(summary) = %+v, %v; want the instant's and two manual runs'", skips, err)
	}
	if skips, err := q.UpstreamFailedSkips(ctx, "audit", t0, 10); err != nil || len(skips) != 2 {
		t.Fatalf("UpstreamFailedSkips(audit) = %+v, %v; want two manual runs'", skips, err)
	}
	for _, down := range []string{"summary", "audit"} {
		js, err := q.FanInJobs(ctx, store.ManualFanInKey(down, "k1"), 10)
		if err != nil || len(js) != 2 || js[0].ID != k1[0].ID || js[0].State != store.StateDead || js[1].ID != k1[1].ID || js[1].State != store.StateDone {
			t.Fatalf("FanInJobs(%s, k1) = %+v, %v; want a dead, b done", down, js, err)
		}
	}
	if js, err := q.FanInJobs(ctx, "none", 10); err != nil || len(js) != 0 {
		t.Fatalf("FanInJobs(none) = %+v, %v; want none", js, err)
	}
	if err := q.Retry(ctx, k1[0].ID); err != nil {
		t.Fatal(err)
	}
	finishKey(t, q, clk.Now(), "up|a|manual|k1", store.OutcomeDone)
	for _, down := range []string{"summary", "audit"} {
		f := fanInState(t, q, store.ManualFanInKey(down, "k1"), store.FanInFired, 2)
		j, err := q.Job(ctx, f.JobID)
		if err != nil || j.Key != down+"||manual|k1" || !j.ScheduledAt.IsZero() || j.Schedule != down {
			t.Fatalf("job of %s after the retry succeeded = %+v, %v; want the manual run's", down, j, err)
		}
	}
	fanInState(t, q, store.ManualFanInKey("summary", "k2"), store.FanInSkipped, 2)
}
