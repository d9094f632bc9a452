package queue

import (
	"context"
	"database/sql"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// failAfter bounds every wait of these tests. Reaching it fails the test;
// it is no claim about speed, and minutes long so that a loaded machine
// passes.
const failAfter = 3 * time.Minute

// newTestQueue opens a queue on a fresh file in t.TempDir() with a fake clock.
func newTestQueue(t testing.TB) (*Client, *clock.Fake) {
	t.Helper()
	return newTestQueueConfig(t, sqlite.Config{})
}

// newTestQueueConfig is newTestQueue with cfg, whose clock it sets.
func newTestQueueConfig(t testing.TB, cfg sqlite.Config) (*Client, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	cfg.Clock = clk
	q, err := openSQLite(context.Background(), filepath.Join(t.TempDir(), "q.db"), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { q.Close() })
	return q, clk
}

// openSQLite opens a Client on the SQLite file at path.
func openSQLite(ctx context.Context, path string, cfg sqlite.Config) (*Client, error) {
	s, err := sqlite.Open(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	return New(s, Config{})
}

// mustNew returns a Client on e, which it closes when t ends.
func mustNew(t testing.TB, e store.Engine) *Client {
	t.Helper()
	q, err := New(e, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// waitFor returns the next value from ch, failing the test after a deadline
// that is a failure bound, not a synchronisation point.
func waitFor[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failAfter):
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}

// eventually polls cond until it holds, failing after a deadline. It is for
// effects that have no channel to wait on, such as rows written by another
// goroutine's transaction.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval of a deadline loop, not a sync point
	}
}

// runPool starts p.Run in the background and returns a function that stops
// it and waits for it.
func runPool(t testing.TB, p *Pool) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var stopped bool
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := waitFor(t, done); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func mustEnqueue(t testing.TB, q *Client, j NewJob) Enqueued {
	t.Helper()
	res, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", j, err)
	}
	return res
}

func mustJob(t testing.TB, q *Client, ref string) *Job {
	t.Helper()
	ctx := context.Background()
	j, err := q.JobByKey(ctx, ref)
	if id, perr := strconv.ParseInt(ref, 10, 64); perr == nil {
		if byID, ierr := q.Job(ctx, id); ierr == nil {
			j, err = byID, nil
		}
	}
	if err != nil {
		t.Fatalf("Job(%s): %v", ref, err)
	}
	return j
}

// rawDB opens q's SQLite file on a connection of the test's own, for the
// set-ups and checks that the Store does not offer.
func rawDB(t testing.TB, q *Client) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+q.Name()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reclaim takes back the expired leases through Maintain, which purges
// nothing a test made, and returns how many.
func reclaim(ctx context.Context, q *Client) (int, error) {
	rep, err := q.Engine().Maintain(ctx, 100*365*24*time.Hour)
	return rep.Reclaimed, err
}
