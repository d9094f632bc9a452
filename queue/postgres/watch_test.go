package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

// deadline is the safety net of a wait that should end at once.
const deadline = 3 * time.Minute

// watch starts s.Watch and returns its channel once it listens.
func watch(t *testing.T, s *postgres.Store) <-chan struct{} {
	t.Helper()
	return watchBuffered(t, s, 1)
}

// watchBuffered is watch with a channel of n buffered wake-ups: none is
// lost to the coalescing of a channel of one.
func watchBuffered(t *testing.T, s *postgres.Store, n int) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, n)
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Safety fires only when the fake clock moves, which it does not here.
		s.Watch(ctx, store.WatchConfig{Poll: time.Second, Safety: time.Hour}, changed, func() { close(started) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-started:
	case <-time.After(deadline):
		t.Fatal("Watch did not start")
	}
	return changed
}

func waitWake(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(deadline):
		t.Fatalf("no wake-up after %s", what)
	}
}

// TestWatchIsPerSchema: a watch hears the notices of its own schema's
// channel only: an enqueue on another schema of the database does not
// wake it. (That other stores on its schema wake it is the suite's
// WatchSeesOtherStores.)
func TestWatchIsPerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	a, b := open(t, dsn, c), open(t, dsn, c)
	other := open(t, pgtest.DSN(t), c)
	changed := watch(t, b)
	if _, err := other.Enqueue(ctx, store.NewJob{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Enqueue(ctx, store.NewJob{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	waitWake(t, changed, "Enqueue")
	// A wake-up left after that one came from the other schema. (The
	// check can miss it: two notices close together make one wake-up.)
	select {
	case <-changed:
		t.Fatal("a second wake-up: the other schema's enqueue reached this watch")
	default:
	}
}

// TestWatchPassesOverOwnReady: a store's watch does not wake for the jobs
// the store itself made ready (its subscribers heard of them at the
// commit), but does for another store's, and for the store's own cancel
// request of a job it runs.
func TestWatchPassesOverOwnReady(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	c := clock.NewFake(t0)
	s, other := open(t, dsn, c), open(t, dsn, c)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.Channel()}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	heard := func(what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		if _, err := conn.WaitForNotification(wctx); err != nil {
			t.Fatalf("no notification after %s: %v", what, err)
		}
	}
	changed := watchBuffered(t, s, 2)
	e, err := s.Enqueue(ctx, store.NewJob{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	heard("the store's Enqueue")
	if _, err := other.Enqueue(ctx, store.NewJob{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	heard("the other store's Enqueue")
	waitWake(t, changed, "the other store's Enqueue")
	// The notices come to the watch in order: the store's own came first,
	// and a wake-up for it would be buffered by now (the check can miss
	// one that comes late, never report one that did not come).
	select {
	case <-changed:
		t.Fatal("a second wake-up: the store's own Enqueue woke its watch")
	default:
	}
	res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: "w", Now: c.Now(),
		Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"t"}}})
	if err != nil || len(res.Claimed) != 1 || res.Claimed[0].ID != e.ID {
		t.Fatalf("PoolTx = %+v, %v; want job %d claimed", res, err, e.ID)
	}
	if _, err := s.RequestCancel(ctx, e.ID, "test"); err != nil {
		t.Fatal(err)
	}
	waitWake(t, changed, "the store's own RequestCancel of a running job")
}

// TestEnqueueTx: jobs enqueued in a transaction that rolls back leave
// nothing; committed, they exist and wake a watch.
func TestEnqueueTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := open(t, dsn, clock.NewFake(t0))
	changed := watch(t, s)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.EnqueueTx(ctx, tx, store.NewJob{Key: "outbox", Type: "t"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.JobByKey(ctx, "outbox"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("job of a rolled back EnqueueTx: %v", err)
	}
	select {
	case <-changed:
		t.Fatal("a rolled back EnqueueTx woke the watch")
	default:
	}
	tx, err = conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := postgres.EnqueueTx(ctx, tx, store.NewJob{Key: "outbox", Type: "t"}, store.NewJob{Key: "outbox", Type: "t"})
	if err != nil || !res[0].Inserted || res[1].Inserted || res[1].ID != res[0].ID {
		t.Fatalf("EnqueueTx = %+v, %v", res, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitWake(t, changed, "a committed EnqueueTx")
	if j, err := s.JobByKey(ctx, "outbox"); err != nil || j.ID != res[0].ID {
		t.Fatalf("JobByKey = %+v, %v", j, err)
	}
}

// TestWatchReconnects: a watch whose connection is killed listens again
// and wakes once it does.
func TestWatchReconnects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s, other := open(t, dsn, clock.Real{}), open(t, dsn, clock.Real{})
	changed := watch(t, s)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE query LIKE 'LISTEN %' AND query LIKE '%' || current_schema() || '%'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminate the watch's connection: %d, %v", killed, err)
	}
	waitWake(t, changed, "reconnecting")
	// The wake-up after reconnecting comes once it listens again. (Another
	// store enqueues: a store's watch passes over its own ready jobs.)
	if _, err := other.Enqueue(ctx, store.NewJob{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	waitWake(t, changed, "Enqueue after reconnecting")
}

// TestServerClock: a store whose own clock is 30 s off writes the
// database server's time.
func TestServerClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	off := clock.NewFake(time.Now().Add(30 * time.Second))
	s, err := postgres.Open(ctx, dsn, postgres.Config{Clock: off})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := s.Enqueue(ctx, store.NewJob{Type: "t"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var secs float64
	if err := conn.QueryRow(ctx, `SELECT extract(epoch FROM clock_timestamp() - created_at)::float8 FROM jobs WHERE id = $1`, e.ID).Scan(&secs); err != nil {
		t.Fatal(err)
	}
	skew := time.Duration(secs * float64(time.Second))
	if skew < -time.Second || skew > 5*time.Second {
		t.Fatalf("created_at is %v before the server's clock; want about 0, not 30 s", skew)
	}
	if d := s.Clock().Now().Sub(time.Now()); d < -5*time.Second || d > 5*time.Second {
		t.Fatalf("Clock() is %v off the host's (which the server shares); want about 0", d)
	}
}

// TestSchemaTooNew: a schema migrated by a newer program is refused.
func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	s := open(t, dsn, clock.NewFake(t0))
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')`, postgres.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, dsn, postgres.Config{LocalClock: true}); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
}
