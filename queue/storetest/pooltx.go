package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

func testReclaimReturnsExpiredLeases(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "again", MaxAttempts: 3})
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "last", MaxAttempts: 1})
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "fresh", MaxAttempts: 1})
	claim(t, q, "gone", clk.Now(), time.Minute, 2, "t")
	clk.Advance(30 * time.Second)
	if n, _ := reclaim(ctx, q); n != 0 {
		t.Fatalf("reclaimed %d live leases", n)
	}
	claim(t, q, "alive", clk.Now(), time.Hour, 1, "t")
	clk.Advance(time.Minute)
	if n, err := reclaim(ctx, q); n != 2 || err != nil {
		t.Fatalf("Reclaim = %d, %v; want 2", n, err)
	}
	if j := mustJob(t, q, "again"); j.State != store.StatePending || j.Attempt != 1 || j.Owner != "" {
		t.Errorf("again: %s attempt %d owner %q, want pending with the attempt spent", j.State, j.Attempt, j.Owner)
	}
	if j := mustJob(t, q, "last"); j.State != store.StateDead || j.FinishedAt.IsZero() {
		t.Errorf("last: %s, want dead (no attempt left)", j.State)
	}
	if j := mustJob(t, q, "fresh"); j.State != store.StateRunning || j.Owner != "alive" {
		t.Errorf("fresh: %s owner %q, want running under a live lease", j.State, j.Owner)
	}
	as, _ := q.Attempts(ctx, mustJob(t, q, "again").ID)
	if len(as) != 1 || as[0].Outcome != store.OutcomeLeaseExpired || as[0].Worker != "gone" {
		t.Errorf("attempts = %+v", as)
	}
}

// testClaimDoesNotPrefetchLastAttempts: past the jobs for free workers, a
// claim stops before a job on its last attempt and leaves it, and every job
// after it, pending with its attempt unspent.
func testClaimDoesNotPrefetchLastAttempts(t *testing.T, su *suite) {
	t.Parallel()
	for _, c := range []struct {
		prefetch int
		careful  bool
		want     string // keys claimed
		held     bool   // taken and given back
	}{
		{0, false, "a b c", false}, // a free worker for each
		{1, false, "a b c", false}, // b goes to a free worker; c has attempts to spare
		{2, false, "a", true},      // b would be prefetched on its last attempt
		{3, false, "a", true},      // no free worker: a is prefetched, b stops it
		// Careful claims look first and take nothing to give back.
		{1, true, "a b c", false},
		{2, true, "a", false},
		{3, true, "a", false},
	} {
		t.Run(fmt.Sprint(c.prefetch, c.careful), func(t *testing.T) {
			t.Parallel()
			q, clk := su.open(t)
			ctx := context.Background()
			_, err := q.EnqueueBatch(ctx, []store.NewJob{
				{Type: "t", Key: "a", MaxAttempts: 5},
				{Type: "t", Key: "b", MaxAttempts: 1},
				{Type: "t", Key: "c", MaxAttempts: 5},
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(),
				Claim: &store.Claim{Lease: time.Minute, N: 3, Types: []string{"t"}, Prefetch: c.prefetch, StopBeforeLast: c.careful}})
			if err != nil {
				t.Fatal(err)
			}
			js, held := res.Claimed, res.GaveBack
			var got []string
			for _, j := range js {
				got = append(got, j.Key)
			}
			if strings.Join(got, " ") != c.want || held != c.held {
				t.Fatalf("claimed %q, held %t; want %q, %t", strings.Join(got, " "), held, c.want, c.held)
			}
			for _, k := range []string{"a", "b", "c"} {
				j := mustJob(t, q, k)
				claimed := slices.Contains(got, k)
				if claimed != (j.State == store.StateRunning) || (!claimed && (j.Attempt != 0 || j.Owner != "")) {
					t.Errorf("job %s: %s attempt %d owner %q; claimed=%t", k, j.State, j.Attempt, j.Owner, claimed)
				}
			}
		})
	}
}

// testFinishDoneInGroups completes claimed jobs in groups of every size
// around the statement sizes, one of them after its lease expired and went
// to another pool: that one must be reported stale, left to its new owner
// and recorded as a stale attempt, and every other one done by its worker.
func testFinishDoneInGroups(t *testing.T, su *suite) {
	t.Parallel()
	for _, n := range []int{1, 2, 7, 8, 9, 33, 129, 170} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			q, clk := su.open(t)
			ctx := context.Background()
			// The job in the middle comes last in the claim order: P claims
			// it alone, on a short lease, which expires and goes to pool Q.
			batch := make([]store.NewJob, n)
			for i := range batch {
				batch[i] = store.NewJob{Type: "t", Key: fmt.Sprint("j", i)}
			}
			batch[n/2].Priority = -1
			if _, err := q.EnqueueBatch(ctx, batch); err != nil {
				t.Fatal(err)
			}
			js := claim(t, q, "P", clk.Now(), time.Hour, n-1, "t")
			js = append(js, claim(t, q, "P", clk.Now(), time.Minute, 1, "t")...)
			if len(js) != n {
				t.Fatalf("claimed %d, want %d", len(js), n)
			}
			stolen := js[n-1]
			clk.Advance(2 * time.Minute)
			res, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "Q", Now: clk.Now(), Reclaim: true,
				Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"t"}}})
			if err != nil || len(res.Reclaimed) != 1 || len(res.Claimed) != 1 || res.Claimed[0].ID != stolen.ID {
				t.Fatalf("Q's reclaim and claim: %+v, %v; want job %d", res, err, stolen.ID)
			}
			rs := make([]store.Result, n)
			for i, j := range js {
				rs[i] = store.Result{Job: j, Worker: fmt.Sprint("P/w", i%3), Outcome: store.OutcomeDone, Started: clk.Now(), Finished: clk.Now()}
			}
			res, err = q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(), Results: rs})
			if err != nil {
				t.Fatal(err)
			}
			ok := res.Fenced
			for i, j := range js {
				got, err := jobByRef(ctx, q, fmt.Sprint(j.ID))
				if err != nil {
					t.Fatal(err)
				}
				as, err := q.Attempts(ctx, j.ID)
				if err != nil {
					t.Fatal(err)
				}
				if j.ID == stolen.ID {
					if ok[i] || got.State != store.StateRunning || got.Owner != "Q" {
						t.Errorf("stolen job: fenced %t, %s by %q; want rejected, still running by Q", ok[i], got.State, got.Owner)
					}
					if len(as) != 2 || as[0].Outcome != store.OutcomeLeaseExpired || as[1].Outcome != store.OutcomeStale || as[1].Worker != rs[i].Worker {
						t.Errorf("stolen job: attempts %+v, want its expired lease and a stale attempt of %s", as, rs[i].Worker)
					}
					continue
				}
				if !ok[i] || got.State != store.StateDone || got.Owner != "" {
					t.Errorf("job %d: fenced %t, %s, owner %q; want done with no lease holder", j.ID, ok[i], got.State, got.Owner)
				}
				if len(as) != 1 || as[0].Outcome != store.OutcomeDone || as[0].Worker != rs[i].Worker || as[0].Number != 1 {
					t.Errorf("job %d: attempts %+v, want attempt 1 done by %s", j.ID, as, rs[i].Worker)
				}
			}
		})
	}
}

// testCancelRequestSurvivesItsPool: a job whose pool is gone (its lease
// expired) with a cancel requested ends cancelled when the lease is
// reclaimed, and a retry committed after the request does not revive it.
func testCancelRequestSurvivesItsPool(t *testing.T, su *suite) {
	t.Parallel()
	ctx := context.Background()
	t.Run("reclaim", func(t *testing.T) {
		t.Parallel()
		q, clk := su.open(t)
		id := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k", MaxAttempts: 5}).ID
		if claimed := claim(t, q, "gone", clk.Now(), time.Minute, 1, "t"); len(claimed) != 1 {
			t.Fatalf("claim: %d jobs", len(claimed))
		}
		if st, err := q.RequestCancel(ctx, id, "alice"); err != nil || st != store.StateRunning {
			t.Fatalf("RequestCancel = %s, %v", st, err)
		}
		clk.Advance(2 * time.Minute)
		if n, err := reclaim(ctx, q); err != nil || n != 1 {
			t.Fatalf("Reclaim = %d, %v; want 1", n, err)
		}
		if j := mustJob(t, q, "k"); j.State != store.StateCancelled || j.FinishedAt.IsZero() {
			t.Errorf("reclaimed job: %s, finished %v; want cancelled", j.State, j.FinishedAt)
		}
	})
	t.Run("retry after the request", func(t *testing.T) {
		t.Parallel()
		q, clk := su.open(t)
		id := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k", MaxAttempts: 5}).ID
		claimed := claim(t, q, "p", clk.Now(), time.Minute, 1, "t")
		if len(claimed) != 1 {
			t.Fatalf("claim: %d jobs", len(claimed))
		}
		if _, err := q.RequestCancel(ctx, id, "alice"); err != nil {
			t.Fatal(err)
		}
		r := store.Result{Job: claimed[0], Worker: "p/w0", Outcome: store.OutcomeRetry, Error: "failed on its own",
			RetryAt: clk.Now().Add(time.Second), Started: clk.Now(), Finished: clk.Now()}
		if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: clk.Now(), Results: []store.Result{r}}); err != nil {
			t.Fatal(err)
		}
		if j := mustJob(t, q, "k"); j.State != store.StateCancelled {
			t.Errorf("job retried after a cancel request: %s, want cancelled", j.State)
		}
	})
}

// testStaleResultOfPurgedJob: the late results of jobs that another pool
// has since run to done, and that were purged, fail their fences without
// failing the transaction that carries them, or the results beside them: nothing
// of theirs is recorded, and the pool's next transaction works.
func testStaleResultOfPurgedJob(t *testing.T, su *suite) {
	t.Parallel()
	a, b, clk := su.openTwo(t)
	ctx := context.Background()
	if _, err := a.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: "done-late"}, {Type: "t", Key: "retry-late"}}); err != nil {
		t.Fatal(err)
	}
	old := claim(t, a, "A", clk.Now(), time.Minute, 2, "t")
	if len(old) != 2 {
		t.Fatalf("A claimed %d jobs, want 2", len(old))
	}
	clk.Advance(time.Hour)
	res, err := b.CommitPoolTx(ctx, store.PoolTx{Owner: "B", Now: clk.Now(), Reclaim: true,
		Claim: &store.Claim{Lease: time.Minute, N: 2, Types: []string{"t"}}})
	if err != nil || len(res.Reclaimed) != 2 || len(res.Claimed) != 2 {
		t.Fatalf("B's reclaim and claim = %+v, %v; want both jobs", res, err)
	}
	var rs []store.Result
	for _, j := range res.Claimed {
		rs = append(rs, store.Result{Job: j, Worker: "B/w0", Outcome: store.OutcomeDone, Output: "ran", Started: clk.Now(), Finished: clk.Now()})
	}
	if res, err := b.CommitPoolTx(ctx, store.PoolTx{Owner: "B", Now: clk.Now(), Results: rs}); err != nil || !res.Fenced[0] || !res.Fenced[1] {
		t.Fatalf("B's results = %+v, %v", res, err)
	}
	clk.Advance(time.Hour)
	if n, _, err := purge(ctx, b, clk.Now()); err != nil || n < 1 {
		t.Fatalf("Purge = %d, %v; want the jobs (an engine may keep the newest)", n, err)
	}
	fresh := mustEnqueue(t, a, store.NewJob{Type: "t", Key: "fresh"})
	now := clk.Now()
	claimed := claim(t, a, "A", now, time.Minute, 1, "t")
	if len(claimed) != 1 || claimed[0].ID != fresh.ID {
		t.Fatalf("A claimed %+v, want the fresh job", claimed)
	}
	res, err = a.CommitPoolTx(ctx, store.PoolTx{Owner: "A", Now: now, Results: []store.Result{
		{Job: old[0], Worker: "A/w0", Outcome: store.OutcomeDone, Output: "late", Started: t0, Finished: now},
		{Job: old[1], Worker: "A/w1", Outcome: store.OutcomeRetry, Error: "late", RetryAt: now, Started: t0, Finished: now},
		{Job: claimed[0], Worker: "A/w2", Outcome: store.OutcomeDone, Started: now, Finished: now},
	}})
	if err != nil || len(res.Fenced) != 3 || res.Fenced[0] || res.Fenced[1] || !res.Fenced[2] {
		t.Fatalf("A's late results with a fresh one = %+v, %v; want the late ones fenced off, the fresh one recorded", res, err)
	}
	for _, j := range old {
		got, err := a.Job(ctx, j.ID)
		if errors.Is(err, store.ErrNotFound) {
			if as, err := a.Attempts(ctx, j.ID); err != nil || len(as) != 0 {
				t.Errorf("attempts of purged job %d = %+v, %v; want none", j.ID, as, err)
			}
			continue
		}
		// Kept by Purge as the newest: B's run stands.
		if err != nil || got.State != store.StateDone || got.Attempt != 2 {
			t.Errorf("job %d kept by Purge after a late result: %+v, %v; want done at attempt 2", j.ID, got, err)
		}
	}
	if j := mustJob(t, a, "fresh"); j.State != store.StateDone {
		t.Errorf("fresh job: %s, want done", j.State)
	}
	mustEnqueue(t, a, store.NewJob{Type: "t", Key: "next"})
	if js := claim(t, a, "A", now, time.Minute, 1, "t"); len(js) != 1 {
		t.Errorf("A's next transaction claimed %d jobs, want 1", len(js))
	}
}

// testClaimTakesOnlyItsTypes: a claim takes ready jobs of the types it
// names, and of each limited type up to its limit, in claim order (priority
// first), and passes over the others, which stay pending for a pool that
// has their handler: an old node in a rolling deploy never takes a job of
// a type it does not know, even at the head of the order.
func testClaimTakesOnlyItsTypes(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	for i, j := range []store.NewJob{
		{Type: "new", Key: "new1", Priority: 9},
		{Type: "a", Key: "a1"},
		{Type: "new", Key: "new2", Priority: 9},
		{Type: "lim", Key: "lim1", Priority: 1},
		{Type: "a", Key: "a2", Priority: 2},
		{Type: "lim", Key: "lim2", Priority: 1},
	} {
		if _, err := q.Enqueue(context.Background(), j); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	res, err := q.CommitPoolTx(context.Background(), store.PoolTx{Owner: "old", Now: clk.Now(),
		Claim: &store.Claim{Lease: time.Minute, N: 10, Types: []string{"a"}, Limited: map[string]int{"lim": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range res.Claimed {
		got = append(got, j.Key)
	}
	if want := []string{"a2", "lim1", "a1"}; !slices.Equal(got, want) {
		t.Errorf("claimed %v, want %v (claim order, the limited type up to its limit, no job of type new)", got, want)
	}
	for _, key := range []string{"new1", "new2", "lim2"} {
		if j := mustJob(t, q, key); j.State != store.StatePending {
			t.Errorf("%s is %s, want pending", key, j.State)
		}
	}
}
