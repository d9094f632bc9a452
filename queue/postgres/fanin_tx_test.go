package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestEnqueueFanInTx: a fan-in enqueued in the caller's transaction commits
// with it, members, sharers and all, or rolls back with it; a call refused
// before it writes leaves the transaction usable; a fan-in of no member
// enqueues its job in the caller's transaction.
func TestEnqueueFanInTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	q := open(t, dsn, clock.NewFake(t0))
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	f := func(key string, n int) store.NewFanIn {
		nf := store.NewFanIn{Key: key, Then: store.NewJob{Type: "then", Key: key + "|then"},
			Also: []store.FanInSpec{{Key: key + "/2", Then: store.NewJob{Type: "then"}}}}
		for i := range n {
			nf.Jobs = append(nf.Jobs, store.NewJob{Type: "m", Key: key + "|" + string(rune('a'+i))})
		}
		return nf
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := postgres.EnqueueFanInTx(ctx, tx, f("lost", 2)); err != nil || !res.Inserted {
		t.Fatalf("EnqueueFanInTx = %+v, %v", res, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"lost", "lost/2"} {
		if _, err := q.FanIn(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("FanIn(%s) after a rollback: %v, want not found", key, err)
		}
	}
	if _, err := q.JobByKey(ctx, "lost|a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("member after a rollback: %v, want not found", err)
	}
	if tx, err = conn.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.EnqueueFanInTx(ctx, tx, f("kept", 2)); err != nil {
		t.Fatal(err)
	}
	bad := f("bad", 1)
	bad.Require = "all"
	if _, err := postgres.EnqueueFanInTx(ctx, tx, bad); err == nil {
		t.Error("EnqueueFanInTx accepted require all")
	}
	if _, err := postgres.EnqueueFanInTx(ctx, tx, f("empty", 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.FanIn(ctx, "kept"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FanIn(kept) before the commit: %v, want not found", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"kept", "kept/2"} {
		if fi, err := q.FanIn(ctx, key); err != nil || fi.Expected != 2 || fi.State != store.FanInWaiting {
			t.Errorf("FanIn(%s) = %+v, %v; want waiting for 2", key, fi, err)
		}
	}
	if fi, err := q.FanIn(ctx, "empty"); err != nil || fi.State != store.FanInFired {
		t.Errorf("FanIn(empty) = %+v, %v; want fired", fi, err)
	}
	if _, err := q.JobByKey(ctx, "empty|then"); err != nil {
		t.Errorf("job of the fan-in of no member: %v", err)
	}
}
