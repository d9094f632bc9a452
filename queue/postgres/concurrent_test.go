package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"scheduler/clock"
	"scheduler/queue/postgres"
	"scheduler/queue/postgres/pgtest"
	"scheduler/queue/store"
)

// TestConcurrentEnqueueDedup enqueues the same keys from two stores at
// once: each key gets one job, and both stores report its id.
func TestConcurrentEnqueueDedup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	a, b := open(t, dsn, c), open(t, dsn, c)
	const keys, rounds = 50, 16
	var mu sync.Mutex
	ids := map[string]map[int64]int{} // key -> id -> inserted count
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	for _, s := range []*postgres.Store{a, b} {
		for r := range rounds {
			wg.Add(1)
			go func() {
				defer wg.Done()
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
			}()
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
}

// TestConcurrentAdvance advances one schedule from two stores at once,
// instant after instant: exactly one wins each step, the other gets
// ErrCursorMoved, and each instant's job exists once.
func TestConcurrentAdvance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	stores := []*postgres.Store{open(t, dsn, c), open(t, dsn, c)}
	var from time.Time
	for step := range 30 {
		to := t0.Add(time.Duration(step+1) * time.Minute)
		adv := store.Advance{Schedule: "s", From: from, To: to,
			Jobs: []store.NewJob{{Key: "s|" + to.Format(time.RFC3339), Type: "t", Schedule: "s", ScheduledAt: to}}}
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if step%2 == 0 {
					_, errs[i] = s.Advance(ctx, adv)
					return
				}
				res, err := s.AdvanceBatch(ctx, []store.Advance{adv})
				if err == nil {
					err = res[0].Err
				}
				errs[i] = err
			}()
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
	cs, err := stores[0].Cursors(ctx)
	if err != nil || !cs["s"].At.Equal(from) {
		t.Fatalf("Cursors = %+v, %v; want at %v", cs, err, from)
	}
	o, err := stores[1].Instant(ctx, "s", from)
	if err != nil || o.Jobs != 1 {
		t.Fatalf("Instant = %+v, %v", o, err)
	}
}

// TestConcurrentClaims drains jobs with claims from two stores at once:
// no job is claimed twice, and every job is claimed.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	stores := []*postgres.Store{open(t, dsn, c), open(t, dsn, c)}
	const n = 500
	jobs := make([]store.NewJob, n)
	for i := range jobs {
		jobs[i] = store.NewJob{Type: "t", Priority: i % 3}
	}
	if _, err := stores[0].EnqueueBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
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
	for i, s := range stores {
		for w := range 2 {
			owner := fmt.Sprintf("pool%d.%d", i, w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				var results []store.Result
				for {
					res, err := s.Trip(ctx, store.Trip{Owner: owner, Now: t0, Results: results,
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
						results = append(results, store.Result{Job: j, Worker: owner, Outcome: store.OutcomeDone, Started: t0, Finished: t0})
					}
					mu.Unlock()
				}
			}()
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
	st, err := stores[0].Stats(ctx)
	if err != nil || st.Total[store.StateDone] != n {
		t.Fatalf("Stats = %+v, %v; want %d done", st, err, n)
	}
}

// TestOpenConcurrently opens three stores on a new schema at once: the
// migrations run once and all three open.
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.Open(context.Background(), dsn, postgres.Config{LocalClock: true})
			if err == nil {
				err = s.Ping(context.Background())
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentAdvanceBatch advances the same schedules from two stores
// at once, in opposite orders, new cursors and moves alike: per schedule
// and step exactly one Advance wins, and no transaction deadlocks.
func TestConcurrentAdvanceBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	stores := []*postgres.Store{open(t, dsn, c), open(t, dsn, c)}
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := advs
				if i == 1 {
					in = reversed
				}
				results[i], errs[i] = s.AdvanceBatch(ctx, in)
			}()
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
}
