package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestPoolReportsFinishesAndReclaims: FinishedFunc hears of each attempt's
// end once it is committed, with its outcome, whether the type's timeout
// ended it, and when it was due; ReclaimedFunc of the leases the pool took
// back from a vanished owner.
func TestPoolReportsFinishesAndReclaims(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	finished := make(chan Finished, 16)
	reclaimed := make(chan int, 16)
	p := newTestPool(t, q, PoolConfig{
		FinishedFunc:  func(f Finished) { finished <- f },
		ReclaimedFunc: func(n int) { reclaimed <- n },
	})
	p.Register("ok", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
	// Its retry is due long after the reclaim below: no job of this pool
	// runs while the clock jumps past the vanished owner's lease, and none
	// of its own leases runs out with it.
	p.Register("fail", HandlerFunc(func(ctx context.Context, j *Job) error { return errors.New("no") }), TypeConfig{Backoff: time.Hour})
	p.Register("slow", HandlerFunc(func(ctx context.Context, j *Job) error {
		<-ctx.Done() // the type's timeout, a job's own deadline
		return ctx.Err()
	}), TypeConfig{Timeout: 20 * time.Millisecond})

	// A job claimed by an owner that vanished: its lease runs out below.
	due := clk.Now().Add(-time.Minute)
	mustEnqueue(t, q, NewJob{Type: "gone", Key: "gone", RunAt: due})
	if res, err := q.Engine().CommitPoolTx(context.Background(), store.PoolTx{Owner: "vanished", Now: clk.Now(),
		Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"gone"}}}); err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim by the vanished owner: %v, %v", res.Claimed, err)
	}
	mustEnqueue(t, q, NewJob{Type: "ok", Key: "ok", RunAt: due})
	mustEnqueue(t, q, NewJob{Type: "fail", Key: "fail", MaxAttempts: 2})
	mustEnqueue(t, q, NewJob{Type: "slow", Key: "slow", MaxAttempts: 1})
	runPool(t, p)

	got := map[string]Finished{}
	for len(got) < 3 {
		f := waitFor(t, finished)
		got[f.Type] = f
	}
	if f := got["ok"]; f.Outcome != OutcomeDone || f.TimedOut || !f.Due.Equal(due) || f.Started.Before(f.Due) {
		t.Errorf("ok: %+v, want done, due at %v", f, due)
	}
	if f := got["fail"]; f.Outcome != OutcomeRetry || f.TimedOut {
		t.Errorf("fail: %+v, want retry, not timed out", f)
	}
	if f := got["slow"]; f.Outcome != OutcomeDead || !f.TimedOut {
		t.Errorf("slow: %+v, want dead and timed out", f)
	}

	advanceUntil(t, clk, 10*time.Second, "the lease reclaimed", func() bool { return len(reclaimed) > 0 })
	if n := <-reclaimed; n != 1 {
		t.Errorf("ReclaimedFunc(%d), want 1", n)
	}
}

// TestFinishedTellsNotifications: a finished event is a notification's
// when its job names the alarm it carries, whatever its key.
func TestFinishedTellsNotifications(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	finished := make(chan Finished, 4)
	p := newTestPool(t, q, PoolConfig{FinishedFunc: func(f Finished) { finished <- f }})
	p.Register("page", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
	p.Register("other", HandlerFunc(func(ctx context.Context, j *Job) error { return nil }), TypeConfig{})
	alarm := store.AlarmKey("s", "", t0, 0, store.AlarmMissed)
	mustEnqueue(t, q, NewJob{Type: "page", Key: "page-1", AlarmKey: alarm})
	mustEnqueue(t, q, NewJob{Type: "other", Key: store.NotifyKey(alarm, "other")})
	runPool(t, p)
	got := map[string]bool{}
	for len(got) < 2 {
		f := waitFor(t, finished)
		got[f.Type] = f.Notification
	}
	if !got["page"] || got["other"] {
		t.Errorf("Notification by type = %v, want page's alone", got)
	}
}
