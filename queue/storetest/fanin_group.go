package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// finishType claims every ready job of type typ and ends each with outcome.
func finishType(t *testing.T, q store.Engine, now time.Time, typ string, outcome store.Outcome) int {
	t.Helper()
	js := claim(t, q, "test", now, time.Minute, 100, typ)
	var rs []store.Result
	for _, j := range js {
		rs = append(rs, store.Result{Job: j, Worker: "test/w0", Outcome: outcome, Started: now, Finished: now, RetryAt: now})
	}
	if _, err := q.CommitPoolTx(context.Background(), store.PoolTx{Owner: "test", Now: now, Results: rs}); err != nil {
		t.Fatal(err)
	}
	return len(js)
}

// jobsOfType returns the jobs of type typ.
func jobsOfType(t *testing.T, q store.Engine, typ string) []*store.Job {
	t.Helper()
	js, err := q.List(context.Background(), store.Filter{Type: typ, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// testFanInSharedMembers: fan-ins over the same members (NewFanIn.Also)
// each count them and decide by their own require: of two after one set,
// one runs though a member failed, the other is skipped and runs once the
// member is retried and succeeds.
func testFanInSharedMembers(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	at := t0.Add(-time.Hour)
	res, err := q.EnqueueFanIn(ctx, store.NewFanIn{Key: "night", Then: store.NewJob{Type: "then"},
		Also: []store.FanInSpec{
			{Key: "night/ended", Then: store.NewJob{Type: "ended"}},
			{Key: "night/done", Require: store.RequireDone, Then: store.NewJob{Type: "done", Schedule: "strict", ScheduledAt: at}},
		},
		Jobs: []store.NewJob{{Type: "m", Key: "a", MaxAttempts: 1}, {Type: "m", Key: "b", MaxAttempts: 1}}})
	if err != nil || !res.Inserted {
		t.Fatalf("EnqueueFanIn = %+v, %v", res, err)
	}
	for _, key := range []string{"night", "night/ended", "night/done"} {
		if f := fanInState(t, q, key, store.FanInWaiting, 0); f.Expected != 2 {
			t.Fatalf("FanIn(%s) = %+v; want 2 expected", key, f)
		}
	}
	finishKey(t, q, t0, "a", store.OutcomeDead)
	fanInState(t, q, "night/ended", store.FanInWaiting, 1)
	finishKey(t, q, t0, "b", store.OutcomeDone)
	fanInState(t, q, "night", store.FanInFired, 2)
	fanInState(t, q, "night/ended", store.FanInFired, 2)
	fanInState(t, q, "night/done", store.FanInSkipped, 2)
	if n := len(jobsOfType(t, q, "then")) + len(jobsOfType(t, q, "ended")); n != 2 {
		t.Fatalf("jobs of the fan-ins that require ended: %d, want 2", n)
	}
	if sk, err := q.SkipAt(ctx, "strict", "", at); err != nil || sk.Reason != store.SkipUpstreamFailed {
		t.Fatalf("SkipAt = %+v, %v", sk, err)
	}
	if err := q.Retry(ctx, mustJob(t, q, "a").ID); err != nil {
		t.Fatal(err)
	}
	finishKey(t, q, t0, "a", store.OutcomeDone)
	fanInState(t, q, "night/done", store.FanInFired, 2)
	if js := jobsOfType(t, q, "done"); len(js) != 1 {
		t.Fatalf("jobs of the fan-in requiring done = %d, want 1", len(js))
	}
	if n := len(jobsOfType(t, q, "then")) + len(jobsOfType(t, q, "ended")); n != 2 {
		t.Fatalf("the retry ran the others again: %d jobs", n)
	}
}

// testFanInChain: a fan-in's Next are fan-ins over its job, inserted with
// it: a, then b once a's members ended, then c once b ended.
func testFanInChain(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	_, err := q.EnqueueFanIn(context.Background(), store.NewFanIn{Key: "a", Then: store.NewJob{Type: "b", Key: "b"},
		Next: []store.FanInSpec{{Key: "fanin|c", Then: store.NewJob{Type: "c", Key: "c"},
			Next: []store.FanInSpec{{Key: "fanin|d", Then: store.NewJob{Type: "d"}}}}},
		Jobs: []store.NewJob{{Type: "m", Key: "a1", MaxAttempts: 1}, {Type: "m", Key: "a2", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.FanIn(context.Background(), "fanin|c"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FanIn(fanin|c) before b's job exists: %v, want ErrNotFound", err)
	}
	if n := finishType(t, q, t0, "m", store.OutcomeDone); n != 2 {
		t.Fatalf("finished %d members, want 2", n)
	}
	if f := fanInState(t, q, "fanin|c", store.FanInWaiting, 0); f.Expected != 1 {
		t.Fatalf("FanIn(fanin|c) = %+v; want b's job as its one member", f)
	}
	if js := jobsOfType(t, q, "c"); len(js) != 0 {
		t.Fatalf("c before b ended: %d jobs", len(js))
	}
	if n := finishType(t, q, t0, "b", store.OutcomeDead); n != 1 {
		t.Fatalf("finished %d b jobs, want 1", n)
	}
	fanInState(t, q, "fanin|c", store.FanInFired, 1)
	if n := finishType(t, q, t0, "c", store.OutcomeDone); n != 1 {
		t.Fatalf("finished %d c jobs, want 1", n)
	}
	fanInState(t, q, "fanin|d", store.FanInFired, 1)
	if js := jobsOfType(t, q, "d"); len(js) != 1 {
		t.Fatalf("d jobs = %d, want 1", len(js))
	}
}

// testFanInSharedRacingFinishers: members of fan-ins sharing them, ended at
// once by two stores, fire each fan-in once, without a deadlock.
func testFanInSharedRacingFinishers(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	const rounds = 6
	for round := range rounds {
		key := fmt.Sprintf("night%d", round)
		_, err := a.EnqueueFanIn(context.Background(), store.NewFanIn{Key: key, Then: store.NewJob{Type: "then"},
			Also: []store.FanInSpec{{Key: key + "/2", Then: store.NewJob{Type: "then"}}},
			Jobs: []store.NewJob{{Type: "m", Key: key + "|0"}, {Type: "m", Key: key + "|1"}}})
		if err != nil {
			t.Fatal(err)
		}
		ja, jb := claimOne2(t, a, "A", t0), claimOne2(t, b, "B", t0)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, p := range []struct {
			q     store.Engine
			owner string
			j     *store.Job
		}{{a, "A", ja}, {b, "B", jb}} {
			wg.Go(func() {
				_, errs[i] = p.q.CommitPoolTx(context.Background(), store.PoolTx{Owner: p.owner, Now: t0,
					Results: []store.Result{{Job: p.j, Worker: p.owner + "/1", Outcome: store.OutcomeDone, Started: t0, Finished: t0}}})
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		fanInState(t, a, key, store.FanInFired, 2)
		fanInState(t, a, key+"/2", store.FanInFired, 2)
	}
	if js := thenJobs(t, a); len(js) != 2*rounds {
		t.Fatalf("then jobs = %d, want %d", len(js), 2*rounds)
	}
}

// testEnqueueWithFanIns: jobs and the fan-ins over runs of them commit
// together; again, nothing more is inserted, and a fan-in over jobs that
// existed already is left out.
func testEnqueueWithFanIns(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	if _, err := q.Enqueue(ctx, store.NewJob{Type: "m", Key: "old"}); err != nil {
		t.Fatal(err)
	}
	jobs := []store.NewJob{{Type: "m", Key: "x1"}, {Type: "m", Key: "x2"}, {Type: "m", Key: "old"}}
	groups := []store.AdvanceFanIn{
		{Specs: []store.FanInSpec{{Key: "fx", Then: store.NewJob{Type: "then"}}, {Key: "fx2", Then: store.NewJob{Type: "then"}}}, First: 0, N: 2},
		{Specs: []store.FanInSpec{{Key: "fold", Then: store.NewJob{Type: "then"}}}, First: 2, N: 1},
	}
	for range 2 {
		res, err := q.EnqueueWithFanIns(ctx, jobs, groups)
		if err != nil || len(res) != 3 || res[2].Inserted {
			t.Fatalf("EnqueueWithFanIns = %+v, %v", res, err)
		}
		fanInState(t, q, "fx", store.FanInWaiting, 0)
		fanInState(t, q, "fx2", store.FanInWaiting, 0)
		if _, err := q.FanIn(ctx, "fold"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("FanIn(fold) = %v; want none over a job that existed", err)
		}
	}
	if _, err := q.EnqueueWithFanIns(ctx, jobs, []store.AdvanceFanIn{{First: 1, N: 3}}); err == nil {
		t.Fatal("EnqueueWithFanIns accepted members out of range")
	}
	finishType(t, q, t0, "m", store.OutcomeDone)
	fanInState(t, q, "fx", store.FanInFired, 2)
	fanInState(t, q, "fx2", store.FanInFired, 2)
}
