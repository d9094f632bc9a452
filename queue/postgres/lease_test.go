package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

func claimOne(t *testing.T, s interface {
	CommitPoolTx(context.Context, store.PoolTx) (store.PoolTxResult, error)
}, owner string, now time.Time) *store.Job {
	t.Helper()
	res, err := s.CommitPoolTx(context.Background(), store.PoolTx{Owner: owner, Now: now, Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"t"}}})
	if err != nil || len(res.Claimed) != 1 {
		t.Fatalf("claim by %s = %+v, %v", owner, res, err)
	}
	return res.Claimed[0]
}

// TestResultTextCleaned: what a text column refuses in an attempt's error
// (invalid UTF-8, NUL) is stored as U+FFFD, not refused with the transaction.
func TestResultTextCleaned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := open(t, pgtest.DSN(t), clock.NewFake(t0))
	e, err := s.Enqueue(ctx, store.NewJob{Type: "t", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	j := claimOne(t, s, "o", t0)
	res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: "o", Now: t0, Results: []store.Result{{Job: j, Worker: "w", Outcome: store.OutcomeDead, Error: "boom\xff\x00", Output: "out\x00", Started: t0, Finished: t0}}})
	if err != nil || !res.Fenced[0] {
		t.Fatalf("finish = %+v, %v", res, err)
	}
	if j, _ := s.Job(ctx, e.ID); j.State != store.StateDead || j.LastError != "boom\uFFFD\uFFFD" {
		t.Fatalf("dead: %+v", j)
	}
	if as, err := s.Attempts(ctx, e.ID); err != nil || len(as) != 1 || as[0].Output != "out\uFFFD" {
		t.Fatalf("Attempts = %+v, %v", as, err)
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
