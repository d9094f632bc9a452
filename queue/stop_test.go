package queue

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// newFreezableQueue is newEngineQueue with a function that makes every
// write to the database wait, as on a database that stopped answering, and
// returns the function that lets the writes go on. On SQLite the test holds
// the write turn, as another process would; on PostgreSQL a connection of
// the test's own holds the pools and jobs tables locked in an open
// transaction.
func newFreezableQueue(t *testing.T, engine string) (q *Client, clk *clock.Fake, freeze func() (release func())) {
	t.Helper()
	if engine == "sqlite" {
		q, clk = newTestQueue(t)
		return q, clk, func() func() {
			f, err := os.OpenFile(q.Name()+"-lock", os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				t.Fatal(err)
			}
			return func() { f.Close() }
		}
	}
	dsn := pgtest.DSN(t)
	clk = clock.NewFake(t0)
	s, err := postgres.Open(context.Background(), dsn, postgres.Config{Clock: clk, LocalClock: true})
	if err != nil {
		t.Fatal(err)
	}
	q, _ = New(s, Config{})
	t.Cleanup(func() { q.Close() })
	return q, clk, func() func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, "BEGIN; LOCK TABLE pools, jobs IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}
		return func() { conn.Close(ctx) }
	}
}

// TestStopEndsWithinItsTimeout stops a pool whose database stops taking
// writes, with a job running that returns during the stop: frozen as the
// stop begins, the pool's writes (its row, the job's result) wait for a
// database that never answers; frozen once the row is gone, the transaction that
// records the result does. Run must still return, within the stop's
// timeout rather than the writes' own bounds (minutes). The deadline below
// is a failure bound thirty times the timeout, no claim about speed; the
// fake clock never moves, so no bound of the pool's clock ends a wait
// either.
func TestStopEndsWithinItsTimeout(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		for _, afterRow := range []bool{false, true} {
			name := engine + "/frozen-at-stop"
			if afterRow {
				name = engine + "/frozen-after-row"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				testStopEndsWithinItsTimeout(t, engine, afterRow)
			})
		}
	}
}

func testStopEndsWithinItsTimeout(t *testing.T, engine string, afterRow bool) {
	q, _, freeze := newFreezableQueue(t, engine)
	const stopTimeout = 2 * time.Second
	p := newTestPool(t, q, PoolConfig{Workers: 1, StopTimeout: stopTimeout})
	started, finish := make(chan struct{}), make(chan struct{})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		close(started)
		<-finish
		return nil
	}), TypeConfig{})
	mustEnqueue(t, q, NewJob{Type: "t", Key: "j"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitFor(t, started)

	var release func()
	if afterRow {
		cancel()
		eventually(t, "the pool's row deleted", func() bool {
			ds, err := q.Pools(context.Background())
			return err == nil && len(ds) == 0
		})
		release = freeze()
	} else {
		release = freeze()
		cancel()
	}
	defer release()
	close(finish)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * stopTimeout):
		t.Fatalf("Run has not returned %s after its stop began, with a stop timeout of %s", 30*stopTimeout, stopTimeout)
	}
	release()
	// The result was not recorded: the job runs again once its lease
	// expires.
	if j := mustJob(t, q, "j"); j.State != StateRunning {
		t.Errorf("job %s after a stop that could not write, want running", j.State)
	}
}
