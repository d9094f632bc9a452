package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestEnqueueFanInTx: a fan-in enqueued in the caller's transaction commits
// with it, members, sharers and all, or rolls back with it; a call that
// fails leaves the transaction as it was; a fan-in of no member enqueues
// its job in the caller's transaction.
func TestEnqueueFanInTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	q, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"), Config{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	f := func(key string, n int) store.NewFanIn {
		nf := store.NewFanIn{Key: key, Then: store.NewJob{Type: "then", Key: key + "|then"},
			Also: []store.FanInSpec{{Key: key + "/2", Then: store.NewJob{Type: "then"}}}}
		for i := range n {
			nf.Jobs = append(nf.Jobs, store.NewJob{Type: "m", Key: key + "|" + string(rune('a'+i))})
		}
		return nf
	}
	rollBack := errors.New("roll back")
	err = q.Tx(ctx, func(tx *sql.Tx) error {
		if res, err := EnqueueFanInTx(ctx, tx, f("lost", 2)); err != nil || !res.Inserted {
			t.Errorf("EnqueueFanInTx = %+v, %v", res, err)
		}
		return rollBack
	})
	if !errors.Is(err, rollBack) {
		t.Fatalf("Tx = %v", err)
	}
	for _, key := range []string{"lost", "lost/2"} {
		if _, err := q.FanIn(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("FanIn(%s) after a rollback: %v, want not found", key, err)
		}
	}
	if _, err := q.JobByKey(ctx, "lost|a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("member after a rollback: %v, want not found", err)
	}
	err = q.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := EnqueueFanInTx(ctx, tx, f("kept", 2)); err != nil {
			return err
		}
		bad := f("bad", 1)
		bad.Require = "all"
		if _, err := EnqueueFanInTx(ctx, tx, bad); err == nil {
			t.Error("EnqueueFanInTx accepted require all")
		}
		_, err := EnqueueFanInTx(ctx, tx, f("empty", 0))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"kept", "kept/2"} {
		if fi, err := q.FanIn(ctx, key); err != nil || fi.Expected != 2 || fi.State != store.FanInWaiting {
			t.Errorf("FanIn(%s) = %+v, %v; want waiting for 2", key, fi, err)
		}
	}
	if _, err := q.FanIn(ctx, "bad"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FanIn(bad) = %v, want not found", err)
	}
	if fi, err := q.FanIn(ctx, "empty"); err != nil || fi.State != store.FanInFired {
		t.Errorf("FanIn(empty) = %+v, %v; want fired", fi, err)
	}
	if _, err := q.JobByKey(ctx, "empty|then"); err != nil {
		t.Errorf("job of the fan-in of no member: %v", err)
	}
}
