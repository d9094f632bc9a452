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

// testConcurrentEnqueueDedupAcrossStores enqueues the same keys from two
// stores on one database at once, in batches and one by one, in various
// orders: each key gets one job, inserted once, and every call with it
// reports that job's id.
func testConcurrentEnqueueDedupAcrossStores(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	ctx := context.Background()
	const keys, rounds = 50, 8
	var mu sync.Mutex
	ids := map[string]map[int64]int{} // key -> id -> inserted count
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for _, s := range []store.Engine{a, b} {
		for r := range rounds {
			wg.Go(func() {
				var jobs []store.NewJob
				for k := range keys {
					if r%4 == 2 {
						k = keys - 1 - k // in reverse
					}
					jobs = append(jobs, store.NewJob{Key: fmt.Sprintf("k%d", (k+r)%keys), Type: "t"})
				}
				var res []store.Enqueued
				var err error
				if r%2 == 0 {
					res, err = s.EnqueueBatch(ctx, jobs)
				} else {
					for _, j := range jobs {
						var e store.Enqueued
						if e, err = s.Enqueue(ctx, j); err != nil {
							break
						}
						res = append(res, e)
					}
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, e := range res {
					if ids[e.Key] == nil {
						ids[e.Key] = map[int64]int{}
					}
					n := ids[e.Key][e.ID]
					if e.Inserted {
						n++
					}
					ids[e.Key][e.ID] = n
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for k, m := range ids {
		if len(m) != 1 {
			t.Errorf("key %s: ids %v, want one", k, m)
		}
		for id, n := range m {
			if id == 0 || n != 1 {
				t.Errorf("key %s: id %d inserted %d times, want once", k, id, n)
			}
		}
	}
	if len(ids) != keys {
		t.Errorf("%d keys, want %d", len(ids), keys)
	}
	if s, _ := b.Stats(ctx); s.Total[store.StatePending] != keys {
		t.Errorf("%d jobs stored, want %d", s.Total[store.StatePending], keys)
	}
}

// testConcurrentAdvanceOneWinner advances one schedule from two stores at
// once, instant after instant, with Advance and AdvanceBatch in turn:
// exactly one wins each step, the other gets ErrCursorMoved, and each
// instant's job exists once.
func testConcurrentAdvanceOneWinner(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	ctx := context.Background()
	stores := []store.Engine{a, b}
	var from time.Time
	for step := range 30 {
		to := t0.Add(time.Duration(step+1) * time.Minute)
		adv := store.Advance{Schedule: "s", From: from, To: to,
			Jobs: []store.NewJob{{Key: "s|" + to.Format(time.RFC3339), Type: "t", Schedule: "s", ScheduledAt: to}}}
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				if step%2 == 0 {
					_, errs[i] = s.Advance(ctx, adv)
					return
				}
				res, err := s.AdvanceBatch(ctx, []store.Advance{adv})
				if err == nil {
					err = res[0].Err
				}
				errs[i] = err
			})
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrCursorMoved):
				t.Fatalf("step %d: %v", step, err)
			}
		}
		if won != 1 {
			t.Fatalf("step %d: %d winners (%v), want 1", step, won, errs)
		}
		from = to
	}
	cs, err := a.Cursors(ctx)
	if err != nil || !cs["s"].At.Equal(from) {
		t.Fatalf("Cursors = %+v, %v; want at %v", cs, err, from)
	}
	for step := range 30 {
		at := t0.Add(time.Duration(step+1) * time.Minute)
		if o, err := b.Instant(ctx, "s", at); err != nil || o.Jobs != 1 {
			t.Fatalf("Instant(%v) = %+v, %v; want one job", at, o, err)
		}
	}
}

// testConcurrentAdvanceBatchOneWinner advances the same schedules from two
// stores at once, in opposite orders, new cursors and moves alike: per
// schedule and step exactly one Advance wins, and no transaction
// deadlocks.
func testConcurrentAdvanceBatchOneWinner(t *testing.T, su *suite) {
	t.Parallel()
	a, b, _ := su.openTwo(t)
	ctx := context.Background()
	stores := []store.Engine{a, b}
	const schedules = 40
	from := map[string]time.Time{}
	for step := range 12 {
		to := t0.Add(time.Duration(step+1) * time.Minute)
		var advs []store.Advance
		for i := range schedules {
			name := fmt.Sprintf("s%02d", i)
			if step == 0 && i%2 == 1 {
				continue // created at the next step, among moves
			}
			advs = append(advs, store.Advance{Schedule: name, From: from[name], To: to,
				Jobs: []store.NewJob{{Key: name + "|" + to.Format(time.RFC3339), Type: "t", Schedule: name, ScheduledAt: to}}})
		}
		reversed := make([]store.Advance, len(advs))
		for i, a := range advs {
			reversed[len(advs)-1-i] = a
		}
		results := make([][]store.AdvanceResult, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Go(func() {
				in := advs
				if i == 1 {
					in = reversed
				}
				results[i], errs[i] = s.AdvanceBatch(ctx, in)
			})
		}
		wg.Wait()
		won := map[string]int{}
		for i, rs := range results {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			for k, r := range rs {
				name := advs[k].Schedule
				if i == 1 {
					name = reversed[k].Schedule
				}
				switch {
				case r.Err == nil:
					won[name]++
				case !errors.Is(r.Err, store.ErrCursorMoved):
					t.Fatalf("step %d, %s: %v", step, name, r.Err)
				}
			}
		}
		for _, a := range advs {
			if won[a.Schedule] != 1 {
				t.Fatalf("step %d, %s: %d winners, want 1", step, a.Schedule, won[a.Schedule])
			}
			from[a.Schedule] = to
		}
	}
	if s, _ := a.Stats(ctx); s.Total[store.StatePending] != schedules*12-schedules/2 {
		t.Errorf("%d jobs, want one per schedule and instant, %d", s.Total[store.StatePending], schedules*12-schedules/2)
	}
}

// testConcurrentClaimsNeverShareAJob drains jobs with claims from two
// stores at once, two pools on each, each completing what it claimed in
// its next transaction: no job is claimed twice, every job is claimed, and every
// completion holds its fence.
func testConcurrentClaimsNeverShareAJob(t *testing.T, su *suite) {
	t.Parallel()
	a, b, clk := su.openTwo(t)
	ctx := context.Background()
	const n = 500
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{Type: "t", Priority: i % 3}
	}
	if _, err := a.EnqueueBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	var mu sync.Mutex
	claimed := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for i, s := range []store.Engine{a, b} {
		for w := range 2 {
			owner := fmt.Sprintf("pool%d.%d", i, w)
			wg.Go(func() {
				var results []store.Result
				for {
					res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: now, Results: results,
						Claim: &store.Claim{Lease: time.Minute, N: 7, Types: []string{"t"}}})
					if err != nil {
						fail(err)
						return
					}
					for _, ok := range res.Fenced {
						if !ok {
							fail(errors.New("a completion lost its fence"))
							return
						}
					}
					if len(res.Claimed) == 0 {
						return
					}
					results = results[:0]
					mu.Lock()
					for _, j := range res.Claimed {
						if prev, dup := claimed[j.ID]; dup {
							fail(fmt.Errorf("job %d claimed by %s and %s", j.ID, prev, owner))
						}
						claimed[j.ID] = owner
						results = append(results, store.Result{Job: j, Worker: owner, Outcome: store.OutcomeDone, Started: now, Finished: now})
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(claimed) != n {
		t.Fatalf("%d jobs claimed, want %d", len(claimed), n)
	}
	if st, err := b.Stats(ctx); err != nil || st.Total[store.StateDone] != n {
		t.Fatalf("Stats = %+v, %v; want %d done", st.Total, err, n)
	}
}
