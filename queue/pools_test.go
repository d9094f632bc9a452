package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// backlog is a test's set-up of 20 long exports and one small cleanup: the
// export handler blocks until the test releases it, one job per value
// sent on release; both handlers report their starts on started.
type backlog struct {
	started chan string // "export" or "cleanup", as each handler starts
	release chan struct{}
	once    sync.Once
}

// releaseAll unblocks every export, at the end of a test (a failed one
// too): registered after runPool, it runs before the pools stop.
func (b *backlog) releaseAll() { b.once.Do(func() { close(b.release) }) }

const backlogExports = 20

func newBacklog(t *testing.T, q *Client) *backlog {
	t.Helper()
	b := &backlog{started: make(chan string, backlogExports+1), release: make(chan struct{})}
	for i := range backlogExports {
		mustEnqueue(t, q, NewJob{Type: "export", Key: fmt.Sprint("export-", i)})
	}
	return b
}

func (b *backlog) export(ctx context.Context, j *Job) error {
	b.started <- "export"
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *backlog) cleanup(ctx context.Context, j *Job) error {
	b.started <- "cleanup"
	return nil
}

// TestPoolsKeepABacklogFromDelayingOtherTypes: a pool of 1 worker for the
// exports and another for the rest, on one queue: with 20 exports queued
// and the first of them running (and blocked), a cleanup enqueued behind
// them starts at once, while every export is still blocked: the backlog
// costs it no claim of its own pool.
func TestPoolsKeepABacklogFromDelayingOtherTypes(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	b := newBacklog(t, q)
	exports := newTestPool(t, q, PoolConfig{Workers: 1, Owner: "daemon/exports"})
	exports.Register("export", HandlerFunc(b.export), TypeConfig{})
	def := newTestPool(t, q, PoolConfig{Workers: 1, Owner: "daemon"})
	def.Register("cleanup", HandlerFunc(b.cleanup), TypeConfig{})
	runPool(t, exports)
	runPool(t, def)
	t.Cleanup(b.releaseAll)
	if got := waitFor(t, b.started); got != "export" {
		t.Fatalf("first start = %s, want export", got)
	}
	mustEnqueue(t, q, NewJob{Type: "cleanup", Key: "cleanup"})
	if got := waitFor(t, b.started); got != "cleanup" {
		t.Fatalf("after the first export, %s started, want the cleanup", got)
	}
	// Every export is still where it was: one running, blocked, and the
	// rest pending behind it.
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Counts[StateRunning]["export"] != 1 || st.Counts[StatePending]["export"] != backlogExports-1 || st.Counts[StateDone]["export"] != 0 {
		t.Errorf("exports when the cleanup started: %v, want 1 running and %d pending", st.Counts, backlogExports-1)
	}
	for range backlogExports {
		b.release <- struct{}{}
	}
	eventually(t, "every job done", func() bool {
		s, _ := q.Stats(context.Background())
		return s.Total[StateDone] == backlogExports+1
	})
}

// TestSharedPoolBacklogDelaysOtherTypes is the same backlog on one pool of
// as many workers (2) running both types, which the test above guards
// against: the cleanup, enqueued behind the exports, starts only once 19
// of them are done.
func TestSharedPoolBacklogDelaysOtherTypes(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	b := newBacklog(t, q)
	p := newTestPool(t, q, PoolConfig{Workers: 2})
	p.Register("export", HandlerFunc(b.export), TypeConfig{})
	p.Register("cleanup", HandlerFunc(b.cleanup), TypeConfig{})
	runPool(t, p)
	t.Cleanup(b.releaseAll)
	waitFor(t, b.started)
	waitFor(t, b.started)
	mustEnqueue(t, q, NewJob{Type: "cleanup", Key: "cleanup"})
	released := 0
	deadline := time.After(failAfter) // a failure bound, not a sync point
wait:
	for {
		select {
		case got := <-b.started:
			if got == "cleanup" {
				break wait
			}
		case b.release <- struct{}{}:
			released++
		case <-deadline:
			t.Fatalf("the cleanup never started; %d exports released", released)
		}
	}
	// 19 had to finish; the 20th, running beside it, may have been
	// released too before the start was seen.
	if released < backlogExports-1 {
		t.Errorf("the cleanup started after %d exports finished, want at least %d: the backlog ahead of it", released, backlogExports-1)
	}
	for ; released < backlogExports; released++ {
		b.release <- struct{}{}
	}
}
