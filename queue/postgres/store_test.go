package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

var _ store.Engine = (*postgres.Store)(nil)

var t0 = time.Date(2026, 3, 8, 6, 0, 0, 0, time.UTC)

// open opens a store on dsn with the fake clock c, closed at the end of t.
func open(t *testing.T, dsn string, c clock.Clock) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Config{Clock: c, LocalClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestReadOnly: a read-only store, as an operator's read command opens,
// creates no table in an empty schema (it reports ErrNotFound), reads a
// schema a daemon made, and cannot write to it.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	if s, err := postgres.Open(ctx, dsn, postgres.Config{ReadOnly: true}); !errors.Is(err, store.ErrNotFound) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("read-only Open of an empty schema = %v, want ErrNotFound", err)
	}
	w, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Enqueue(ctx, store.NewJob{Type: "t", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	r, err := postgres.Open(ctx, dsn, postgres.Config{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of a daemon's schema: %v", err)
	}
	defer r.Close()
	if j, err := r.JobByKey(ctx, "k"); err != nil || j.Key != "k" {
		t.Fatalf("JobByKey on a read-only store = %v, %v", j, err)
	}
	if _, err := r.Enqueue(ctx, store.NewJob{Type: "t", Key: "k2"}); err == nil {
		t.Fatal("Enqueue on a read-only store succeeded")
	}
}

// TestCursorsByNameHoldsNoConnection: CursorsByName holds no connection of
// the pool while it yields, so that the caller's writes, which a beat makes
// while it merges the cursors with its schedules, never wait for it; here
// Maintain, which needs both connections of a pool of two.
func TestCursorsByNameHoldsNoConnection(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a safety net
	defer cancel()
	s, err := postgres.Open(ctx, pgtest.DSN(t), postgres.Config{Clock: clock.NewFake(t0), LocalClock: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.AdvanceBatch(ctx, []store.Advance{{Schedule: "a", To: t0}, {Schedule: "b", To: t0}}); err != nil {
		t.Fatal(err)
	}
	var errs []error
	err = s.CursorsByName(ctx, func(c store.Cursor) bool {
		_, err := s.Maintain(ctx, time.Hour)
		errs = append(errs, err)
		return true
	})
	if err != nil || len(errs) != 2 || errors.Join(errs...) != nil {
		t.Fatalf("CursorsByName = %v, Maintain in its yields = %v; want two maintenances, no error", err, errs)
	}
}
