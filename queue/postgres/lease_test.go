package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"scheduler/clock"
	"scheduler/queue/postgres/pgtest"
	"scheduler/queue/store"
)

func claimOne(t *testing.T, s interface {
	Trip(context.Context, store.Trip) (store.TripResult, error)
}, owner string, now time.Time) *store.Job {
	t.Helper()
	res, err := s.Trip(context.Background(), store.Trip{Owner: owner, Now: now, Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"t"}}})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim by %s = %+v, %v", owner, res, err)
	}
	return res.Claimed[0]
}

// TestFenceAfterReclaim: a worker whose lease was reclaimed, and whose job
// was claimed again by another pool, changes nothing with its late result,
// which is recorded as a stale attempt.
func TestFenceAfterReclaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	a, b := open(t, dsn, c), open(t, dsn, c)
	e, err := a.Enqueue(ctx, store.NewJob{Type: "t", MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	old := claimOne(t, a, "A", t0)
	later := t0.Add(2 * time.Minute)
	res, err := b.Trip(ctx, store.Trip{Owner: "B", Now: later, Reclaim: true, Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"t"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reclaimed) != 1 || res.Reclaimed[0] != (store.Reclaimed{ID: e.ID, Attempt: 1, Owner: "A"}) {
		t.Fatalf("Reclaimed = %+v", res.Reclaimed)
	}
	if len(res.Claimed) != 1 || res.Claimed[0].Attempt != 2 {
		t.Fatalf("Claimed = %+v", res.Claimed)
	}
	res, err = a.Trip(ctx, store.Trip{Owner: "A", Now: later, Results: []store.Result{{Job: old, Worker: "A/1", Outcome: store.OutcomeDone, Started: t0, Finished: later}}})
	if err != nil || res.Fenced[0] {
		t.Fatalf("late result = %+v, %v; want fence failed", res, err)
	}
	j, err := a.Job(ctx, e.ID)
	if err != nil || j.State != store.StateRunning || j.Owner != "B" || j.Attempt != 2 {
		t.Fatalf("job = %+v, %v; want running under B at attempt 2", j, err)
	}
	as, err := a.Attempts(ctx, e.ID)
	if err != nil || len(as) != 2 || as[0].Outcome != store.OutcomeLeaseExpired || as[1].Outcome != store.OutcomeStale {
		t.Fatalf("Attempts = %+v, %v", as, err)
	}

	// The same owner, having lost and claimed the job again, is fenced by
	// the attempt.
	e2, err := a.Enqueue(ctx, store.NewJob{Type: "t", RunAt: later, Priority: 1})
	if err != nil {
		t.Fatal(err)
	}
	first := claimOne(t, a, "A", later)
	if first.ID != e2.ID {
		t.Fatalf("claimed %d, want %d", first.ID, e2.ID)
	}
	much := later.Add(time.Hour)
	res, err = a.Trip(ctx, store.Trip{Owner: "A", Now: much, Reclaim: true, Heartbeat: much.Add(time.Hour), Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"t"}}})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != e2.ID || res.Claimed[0].Attempt != 2 {
		t.Fatalf("reclaim and claim again = %+v, %v", res, err)
	}
	res, err = a.Trip(ctx, store.Trip{Owner: "A", Now: much, Results: []store.Result{{Job: first, Worker: "A/1", Outcome: store.OutcomeDone, Started: later, Finished: much}}})
	if err != nil || res.Fenced[0] {
		t.Fatalf("late result of attempt 1 = %+v, %v; want fence failed", res, err)
	}
	if j, _ := a.Job(ctx, e2.ID); j.State != store.StateRunning || j.Attempt != 2 {
		t.Fatalf("job = %+v; want still running attempt 2", j)
	}
}

// TestResultsAndRetry walks a job through a release (attempt given back),
// a retry, death, a Retry with a fresh set of attempts, and a cancel.
func TestResultsAndRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clock.NewFake(t0)
	s := open(t, pgtest.DSN(t), c)
	e, err := s.Enqueue(ctx, store.NewJob{Type: "t", MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	finish := func(j *store.Job, o store.Outcome, retryAt time.Time) {
		t.Helper()
		res, err := s.Trip(ctx, store.Trip{Owner: "o", Now: t0, Results: []store.Result{{Job: j, Worker: "w", Outcome: o, Error: "boom\xff\x00", Output: "out", RetryAt: retryAt, Started: t0, Finished: t0}}})
		if err != nil || !res.Fenced[0] {
			t.Fatalf("finish %s = %+v, %v", o, res, err)
		}
	}
	finish(claimOne(t, s, "o", t0), store.OutcomeReleased, time.Time{})
	j, _ := s.Job(ctx, e.ID)
	if j.State != store.StatePending || j.Attempt != 0 {
		t.Fatalf("released: %+v", j)
	}
	finish(claimOne(t, s, "o", t0), store.OutcomeRetry, t0)
	j2 := claimOne(t, s, "o", t0)
	if !j2.LastAttempt() {
		t.Fatalf("attempt %d of %d: want the last", j2.Attempt, j2.MaxAttempts)
	}
	finish(j2, store.OutcomeDead, time.Time{})
	j, _ = s.Job(ctx, e.ID)
	if j.State != store.StateDead || j.LastError != "boom\uFFFD\uFFFD" || !j.FinishedAt.Equal(t0) {
		t.Fatalf("dead: %+v", j)
	}
	if err := s.Retry(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Retry(ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Retry of a pending job: %v", err)
	}
	j, _ = s.Job(ctx, e.ID)
	if j.State != store.StatePending || j.Attempt != 2 || j.MaxAttempts != 4 {
		t.Fatalf("retried: %+v; want attempt 2 of 4", j)
	}
	run := claimOne(t, s, "o", t0)
	st, err := s.RequestCancel(ctx, e.ID, "op")
	if err != nil || st != store.StateRunning {
		t.Fatalf("RequestCancel = %s, %v", st, err)
	}
	reqs, err := s.CancelRequests(ctx, "o")
	if err != nil || len(reqs) != 1 || reqs[0] != (store.CancelRequest{ID: e.ID, Attempt: 3, By: "op"}) {
		t.Fatalf("CancelRequests = %+v, %v", reqs, err)
	}
	// A retry of a job whose cancel was requested ends it cancelled.
	finish(run, store.OutcomeRetry, t0)
	j, _ = s.Job(ctx, e.ID)
	if j.State != store.StateCancelled {
		t.Fatalf("retry after a cancel request: %+v", j)
	}
	as, err := s.Attempts(ctx, e.ID)
	if err != nil || len(as) != 4 {
		t.Fatalf("Attempts = %+v, %v", as, err)
	}
	want := []store.Outcome{store.OutcomeReleased, store.OutcomeRetry, store.OutcomeDead, store.OutcomeRetry}
	for i, a := range as {
		if a.Outcome != want[i] {
			t.Errorf("attempt %d: %s, want %s", i, a.Outcome, want[i])
		}
	}
}

// TestPrefetchHeld: past the jobs for free workers, a claim gives back the
// jobs from the first one on its last attempt on.
func TestPrefetchHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := clock.NewFake(t0)
	s := open(t, pgtest.DSN(t), c)
	var jobs []store.NewJob
	for i := range 4 {
		max := 5
		if i == 2 {
			max = 1
		}
		jobs = append(jobs, store.NewJob{Type: "t", MaxAttempts: max, RunAt: t0.Add(time.Duration(i) * time.Second)})
	}
	if _, err := s.EnqueueBatch(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	for _, careful := range []bool{false, true} {
		res, err := s.Trip(ctx, store.Trip{Owner: "o", Now: now, Claim: &store.Claim{Lease: time.Minute, N: 4, Prefetch: 3, Types: []string{"t"}, Careful: careful}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Claimed) != 2 || res.Held == careful {
			t.Fatalf("careful %v: claimed %d held %v; want 2, held %v", careful, len(res.Claimed), res.Held, !careful)
		}
		var rs []store.Result
		for _, j := range res.Claimed {
			rs = append(rs, store.Result{Job: j, Worker: "w", Outcome: store.OutcomeReleased, Finished: t0})
		}
		if _, err := s.Trip(ctx, store.Trip{Owner: "o", Now: now, Results: rs}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil || st.Total[store.StatePending] != 4 {
		t.Fatalf("Stats = %+v, %v", st, err)
	}
}

// TestMaintainOneNode: while one node maintains (holds the lock), another
// node's Maintain is skipped.
func TestMaintainOneNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	a, b := open(t, dsn, c), open(t, dsn, c)
	if _, err := a.Enqueue(ctx, store.NewJob{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	claimOne(t, a, "gone", t0)
	c.Advance(time.Hour)
	// Hold the lock from a third connection, as another node maintaining.
	hold, err := postgresConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, 0x5343_4845); err != nil {
		t.Fatal(err)
	}
	rep, err := b.Maintain(ctx, time.Hour)
	if err != nil || !rep.Skipped || rep.Reclaimed != 0 {
		t.Fatalf("Maintain while locked = %+v, %v; want skipped", rep, err)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, 0x5343_4845); err != nil {
		t.Fatal(err)
	}
	hold.Close(ctx)
	rep, err = b.Maintain(ctx, time.Hour)
	if err != nil || rep.Skipped || rep.Reclaimed != 1 {
		t.Fatalf("Maintain = %+v, %v; want one reclaimed", rep, err)
	}
	rep, err = a.Maintain(ctx, time.Hour)
	if err != nil || rep.Skipped {
		t.Fatalf("Maintain after another = %+v, %v; want the lock released", rep, err)
	}
}
