package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// fanIn enqueues a fan-in keyed key of n members of type "m" (items i0,
// i1, ...) and a job of type "then", failing the test on error.
func fanIn(t *testing.T, q store.Engine, key string, n int, require store.Require) store.FanInEnqueued {
	t.Helper()
	f := store.NewFanIn{Key: key, Require: require,
		Then: store.NewJob{Type: "then", Payload: json.RawMessage(`{"upstream":"nightly"}`)}}
	for i := range n {
		f.Jobs = append(f.Jobs, store.NewJob{Type: "m", Key: fmt.Sprintf("%s|i%d", key, i), Item: fmt.Sprintf("i%d", i), MaxAttempts: 1})
	}
	res, err := q.EnqueueFanIn(context.Background(), f)
	if err != nil || !res.Inserted || len(res.Jobs) != n {
		t.Fatalf("EnqueueFanIn(%s) = %+v, %v", key, res, err)
	}
	return res
}

// thenJobs returns the jobs of type "then".
func thenJobs(t *testing.T, q store.Engine) []*store.Job {
	t.Helper()
	js, err := q.List(context.Background(), store.Filter{Type: "then", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// fanInState fails the test unless the fan-in key stands at state with
// ended members ended.
func fanInState(t *testing.T, q store.Engine, key string, state store.FanInState, ended int) store.FanIn {
	t.Helper()
	f, err := q.FanIn(context.Background(), key)
	if err != nil || f.State != state || f.Ended != ended {
		t.Fatalf("FanIn(%s) = %+v, %v; want %s with %d ended", key, f, err, state, ended)
	}
	return f
}

// finishAll claims every ready "m" job and records outcome for each, in one
// PoolTx.
func finishAll(t *testing.T, q store.Engine, now time.Time, outcome func(*store.Job) store.Outcome) []bool {
	t.Helper()
	js := claim(t, q, "test", now, time.Minute, 100, "m")
	var rs []store.Result
	for _, j := range js {
		rs = append(rs, store.Result{Job: j, Worker: "test/w0", Outcome: outcome(j), Started: now, Finished: now, RetryAt: now})
	}
	res, err := q.CommitPoolTx(context.Background(), store.PoolTx{Owner: "test", Now: now, Results: rs})
	if err != nil {
		t.Fatal(err)
	}
	return res.Fenced
}

// finishKey claims every ready "m" job and records outcome for the one
// keyed key, releasing the others.
func finishKey(t *testing.T, q store.Engine, now time.Time, key string, outcome store.Outcome) {
	t.Helper()
	n := 0
	fenced := finishAll(t, q, now, func(j *store.Job) store.Outcome {
		if j.Key == key {
			n++
			return outcome
		}
		return store.OutcomeReleased
	})
	if n != 1 || slices.Contains(fenced, false) {
		t.Fatalf("finish %s: %d claimed, fenced %v", key, n, fenced)
	}
}

// testFanInFiresOnTheLastEnd: the fan-in's job is enqueued by the
// transaction that records the last member's end, once, with the members'
// outcomes in its payload; not before.
func testFanInFiresOnTheLastEnd(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	fanIn(t, q, "night", 3, store.RequireEnded)
	if f := fanInState(t, q, "night", store.FanInWaiting, 0); f.Expected != 3 || f.Type != "then" {
		t.Fatalf("FanIn = %+v; want 3 expected, type then", f)
	}
	finishKey(t, q, t0, "night|i0", store.OutcomeDone)
	finishKey(t, q, t0, "night|i1", store.OutcomeDead)
	fanInState(t, q, "night", store.FanInWaiting, 2)
	if js := thenJobs(t, q); len(js) != 0 {
		t.Fatalf("then jobs before the last end: %d", len(js))
	}
	finishKey(t, q, t0, "night|i2", store.OutcomeDone)
	f := fanInState(t, q, "night", store.FanInFired, 3)
	js := thenJobs(t, q)
	if len(js) != 1 || js[0].ID != f.JobID || js[0].Key != "night|then" || js[0].State != store.StatePending {
		t.Fatalf("then jobs = %+v; want one pending, keyed night|then, id %d", js, f.JobID)
	}
	var p struct {
		Upstream              string
		Done, Dead, Cancelled []string
	}
	if err := json.Unmarshal(js[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Upstream != "nightly" || !slices.Equal(p.Done, []string{"i0", "i2"}) || !slices.Equal(p.Dead, []string{"i1"}) || len(p.Cancelled) != 0 || p.Cancelled == nil {
		t.Fatalf("payload = %s", js[0].Payload)
	}
	// A retried member that ends again fires nothing more.
	if err := q.Retry(ctx, mustJob(t, q, "night|i1").ID); err != nil {
		t.Fatal(err)
	}
	fanInState(t, q, "night", store.FanInFired, 2)
	finishKey(t, q, t0, "night|i1", store.OutcomeDone)
	fanInState(t, q, "night", store.FanInFired, 3)
	if js := thenJobs(t, q); len(js) != 1 {
		t.Fatalf("then jobs after a retry = %d, want 1", len(js))
	}
	// A second enqueue of the key inserts nothing.
	res, err := q.EnqueueFanIn(ctx, store.NewFanIn{Key: "night", Then: store.NewJob{Type: "then"},
		Jobs: []store.NewJob{{Type: "m"}}})
	if err != nil || res.Inserted || res.ID != f.ID || len(res.Jobs) != 0 {
		t.Fatalf("EnqueueFanIn again = %+v, %v; want the existing one, nothing inserted", res, err)
	}
	// A fan-in of no members fires at once.
	empty, err := q.EnqueueFanIn(ctx, store.NewFanIn{Key: "empty", Then: store.NewJob{Type: "then"}})
	if err != nil || !empty.Inserted {
		t.Fatal(empty, err)
	}
	fanInState(t, q, "empty", store.FanInFired, 0)
}

// testFanInRequireDone: a failed member skips the fan-in's job, recording a
// skip of its instant; once the failed member is retried and succeeds, the
// job runs.
func testFanInRequireDone(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	at := t0.Add(-time.Hour)
	_, err := q.EnqueueFanIn(ctx, store.NewFanIn{Key: "night", Require: store.RequireDone,
		Then: store.NewJob{Type: "then", Schedule: "summary", ScheduledAt: at},
		Jobs: []store.NewJob{{Type: "m", Key: "a", MaxAttempts: 1}, {Type: "m", Key: "b", MaxAttempts: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	finishAll(t, q, t0, func(j *store.Job) store.Outcome {
		if j.Key == "a" {
			return store.OutcomeDead
		}
		return store.OutcomeDone
	})
	f := fanInState(t, q, "night", store.FanInSkipped, 2)
	if f.Schedule != "summary" || !f.ScheduledAt.Equal(at) {
		t.Fatalf("FanIn = %+v", f)
	}
	if js := thenJobs(t, q); len(js) != 0 {
		t.Fatalf("then jobs of a skipped fan-in: %d", len(js))
	}
	sk, err := q.SkipAt(ctx, "summary", "", at)
	if err != nil || sk.Reason != store.SkipUpstreamFailed {
		t.Fatalf("SkipAt = %+v, %v; want %q", sk, err, store.SkipUpstreamFailed)
	}
	if err := q.Retry(ctx, mustJob(t, q, "a").ID); err != nil {
		t.Fatal(err)
	}
	fanInState(t, q, "night", store.FanInSkipped, 1)
	finishKey(t, q, t0, "a", store.OutcomeDone)
	fanInState(t, q, "night", store.FanInFired, 2)
	if js := thenJobs(t, q); len(js) != 1 || !js[0].ScheduledAt.Equal(at) || js[0].Schedule != "summary" {
		t.Fatalf("then jobs after the retry succeeded = %+v; want one of summary at its instant", js)
	}
}

// testFanInCancelledAndReclaimed: a cancelled pending member and a member
// whose lease expired on its last attempt count as ended.
func testFanInCancelledAndReclaimed(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	res := fanIn(t, q, "night", 2, store.RequireEnded)
	if err := cancelPending(ctx, q, res.Jobs[0].ID); err != nil {
		t.Fatal(err)
	}
	fanInState(t, q, "night", store.FanInWaiting, 1)
	if js := claim(t, q, "gone", t0, time.Minute, 10, "m"); len(js) != 1 || js[0].FanInID != res.ID {
		t.Fatalf("claimed %+v; want the member of fan-in %d", js, res.ID)
	}
	clk.Advance(time.Hour)
	if n, err := reclaim(ctx, q); n != 1 || err != nil {
		t.Fatalf("reclaim = %d, %v", n, err)
	}
	fanInState(t, q, "night", store.FanInFired, 2)
	js := thenJobs(t, q)
	if len(js) != 1 {
		t.Fatalf("then jobs = %d, want 1", len(js))
	}
	var p struct{ Dead, Cancelled []string }
	if err := json.Unmarshal(js[0].Payload, &p); err != nil || !slices.Equal(p.Dead, []string{"i1"}) || !slices.Equal(p.Cancelled, []string{"i0"}) {
		t.Fatalf("payload = %s, %v", js[0].Payload, err)
	}
}

// testFanInStaleEndDoesNotCount: a member's end fenced off as stale (its
// lease was reclaimed and it runs again) does not count, nor does a retry;
// the attempt that ends it does, once.
func testFanInStaleEndDoesNotCount(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	ctx := context.Background()
	res, err := a.EnqueueFanIn(ctx, store.NewFanIn{Key: "night", Then: store.NewJob{Type: "then"},
		Jobs: []store.NewJob{{Type: "m", Key: "a", MaxAttempts: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	old := claimOne2(t, a, "A", t0)
	later := t0.Add(2 * time.Minute)
	r, err := b.CommitPoolTx(ctx, store.PoolTx{Owner: "B", Now: later, Reclaim: true, Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"m"}}})
	if err != nil || len(r.Claimed) != 1 || r.Claimed[0].FanInID != res.ID {
		t.Fatalf("reclaim and claim = %+v, %v", r, err)
	}
	cur := r.Claimed[0]
	r, err = a.CommitPoolTx(ctx, store.PoolTx{Owner: "A", Now: later, Results: []store.Result{{Job: old, Worker: "A/1", Outcome: store.OutcomeDone, Started: t0, Finished: later}}})
	if err != nil || r.Fenced[0] {
		t.Fatalf("stale result = %+v, %v", r, err)
	}
	fanInState(t, a, "night", store.FanInWaiting, 0)
	r, err = b.CommitPoolTx(ctx, store.PoolTx{Owner: "B", Now: later, Results: []store.Result{{Job: cur, Worker: "B/1", Outcome: store.OutcomeRetry, Started: later, Finished: later, RetryAt: later}}})
	if err != nil || !r.Fenced[0] {
		t.Fatal(r, err)
	}
	fanInState(t, a, "night", store.FanInWaiting, 0)
	finishKey(t, b, later, "a", store.OutcomeDone)
	fanInState(t, a, "night", store.FanInFired, 1)
	if js := thenJobs(t, a); len(js) != 1 {
		t.Fatalf("then jobs = %d, want 1", len(js))
	}
}

// claimOne2 claims the one ready "m" job for owner at now.
func claimOne2(t *testing.T, q store.Engine, owner string, now time.Time) *store.Job {
	t.Helper()
	js := claim(t, q, owner, now, time.Minute, 1, "m")
	if len(js) != 1 {
		t.Fatalf("claim by %s: %d jobs, want 1", owner, len(js))
	}
	return js[0]
}

// testFanInRacingFinishers: members ended at once by two stores, as two
// daemons or nodes, fire the fan-in once.
func testFanInRacingFinishers(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	const n, rounds = 2, 8
	for round := range rounds {
		key := fmt.Sprintf("night%d", round)
		fanIn(t, a, key, n, store.RequireEnded)
		ja, jb := claimOne2(t, a, "A", t0), claimOne2(t, b, "B", t0)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, p := range []struct {
			q     store.Engine
			owner string
			j     *store.Job
		}{{a, "A", ja}, {b, "B", jb}} {
			wg.Go(func() {
				r, err := p.q.CommitPoolTx(context.Background(), store.PoolTx{Owner: p.owner, Now: t0,
					Results: []store.Result{{Job: p.j, Worker: p.owner + "/1", Outcome: store.OutcomeDone, Started: t0, Finished: t0}}})
				if err == nil && !r.Fenced[0] {
					err = errors.New("fence failed")
				}
				errs[i] = err
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		fanInState(t, a, key, store.FanInFired, n)
	}
	if js := thenJobs(t, a); len(js) != rounds {
		t.Fatalf("then jobs = %d, want %d", len(js), rounds)
	}
}
