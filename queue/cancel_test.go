package queue

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
)

// attemptsText renders a job's attempts as "1:cancelled ...".
func attemptsText(t *testing.T, q *Client, id int64) string {
	t.Helper()
	as, err := q.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range as {
		got = append(got, fmt.Sprintf("%d:%s", a.Number, a.Outcome))
	}
	return strings.Join(got, " ")
}

// TestCancelRunningJobFromAnotherProcess: a cancel requested through another
// connection set, as the CLI would, reaches the running attempt's context
// with a *CancelledError as its cause; the job ends cancelled with a
// cancelled attempt saying who asked, and is not retried.
func TestCancelRunningJobFromAnotherProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	ctx := context.Background()
	daemon, err := openSQLite(ctx, path, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Closed by a cleanup, after the pool's (which runs first): a deferred
	// Close would close the store under a pool still in a transaction.
	t.Cleanup(func() { daemon.Close() })
	cli, err := openSQLite(ctx, path, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	// MaxIdle and the lease are long: only the data_version watch can explain
	// a prompt stop.
	p := newTestPool(t, daemon, PoolConfig{MaxIdle: time.Hour, Lease: time.Hour})
	started, causes := make(chan struct{}, 1), make(chan error, 2)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}), TypeConfig{})
	id := mustEnqueue(t, cli, NewJob{Type: "t", Key: "long", MaxAttempts: 5}).ID
	runPool(t, p)
	waitFor(t, started)

	st, err := cli.RequestCancel(ctx, id, "alice")
	if err != nil || st != StateRunning {
		t.Fatalf("RequestCancel = %s, %v; want running, nil", st, err)
	}
	var ce *CancelledError
	if cause := waitFor(t, causes); !errors.As(cause, &ce) || ce.By != "alice" {
		t.Fatalf("attempt's context cause = %v, want a *CancelledError by alice", cause)
	}
	eventually(t, "job cancelled", func() bool { return mustJob(t, cli, "long").State == StateCancelled })
	j := mustJob(t, cli, "long")
	if j.Attempt != 1 || !strings.Contains(j.LastError, "cancelled by alice") {
		t.Errorf("job: attempt %d, last error %q; want 1 attempt, cancelled by alice", j.Attempt, j.LastError)
	}
	if got, want := attemptsText(t, cli, id), "1:cancelled"; got != want {
		t.Errorf("attempts = %s, want %s", got, want)
	}
	// A second request finds it cancelled and changes nothing.
	if st, err := cli.RequestCancel(ctx, id, "bob"); err != nil || st != StateCancelled {
		t.Errorf("second RequestCancel = %s, %v; want cancelled", st, err)
	}
	if _, err := cli.RequestCancel(ctx, 9999, "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RequestCancel of no job: %v, want ErrNotFound", err)
	}
}

// TestCancelBeforeStartRunsNothing: a job claimed ahead of a free worker
// (prefetched) whose cancel arrives before it starts ends cancelled without
// its handler running.
func TestCancelBeforeStartRunsNothing(t *testing.T) {
	t.Parallel()
	var s stops
	j := &Job{ID: 7, Attempt: 1}
	s.deliver([]store.CancelRequest{{ID: 7, Attempt: 1, By: "alice"}})
	cancelled := false
	e := s.start(j, func(error) { cancelled = true })
	if e == nil || e.By != "alice" || cancelled {
		t.Fatalf("start after an early request = %v (cancelled %v), want the request", e, cancelled)
	}
	// A request for a job that is no longer running is dropped at the next
	// delivery.
	s.deliver([]store.CancelRequest{{ID: 8, Attempt: 1, By: "bob"}})
	s.deliver(nil)
	if e := s.start(&Job{ID: 8, Attempt: 1}, func(error) {}); e != nil {
		t.Errorf("stale request kept: %v", e)
	}
}
