package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentEnqueuesAllLand enqueues from many goroutines at once, one
// job per call and fsynced, a few of them under one shared key: every call
// gets its own job, the shared key is inserted once, and every other call
// with it gets that job's id.
func TestConcurrentEnqueuesAllLand(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	ctx := context.Background()
	const goroutines, each = 16, 25
	var wg sync.WaitGroup
	results := make([][]Enqueued, goroutines)
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("g%d-%d", g, i)
				if i == 0 {
					key = "shared"
				}
				r, err := q.Enqueue(ctx, NewJob{Type: "t", Key: key})
				if err != nil {
					errs <- err
					return
				}
				results[g] = append(results[g], r)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ids := map[int64]string{}
	inserted, sharedID := 0, mustJob(t, q, "shared").ID
	for _, rs := range results {
		for _, r := range rs {
			if r.Key == "shared" {
				if r.ID != sharedID {
					t.Errorf("shared key: id %d, want %d", r.ID, sharedID)
				}
				if r.Inserted {
					inserted++
				}
				continue
			}
			if prev, dup := ids[r.ID]; dup || !r.Inserted {
				t.Errorf("key %s: id %d (also %q), inserted %t", r.Key, r.ID, prev, r.Inserted)
			}
			ids[r.ID] = r.Key
		}
	}
	if inserted != 1 {
		t.Errorf("shared key inserted %d times, want once", inserted)
	}
	s, _ := q.Stats(ctx)
	if want := goroutines*(each-1) + 1; s.Total[StatePending] != want {
		t.Errorf("%d pending jobs, want %d", s.Total[StatePending], want)
	}
}

// TestGroupedCallFailsAlone forms a group of calls behind a busy writer and
// fails one of them halfway through its jobs: that call's jobs are all
// undone and it gets the error; the others commit.
func TestGroupedCallFailsAlone(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	boom := errors.New("boom")
	testHookInsert = func(j NewJob) error {
		if j.Key == "bad-2" {
			return boom
		}
		return nil
	}
	defer func() { testHookInsert = nil }()

	// Hold the writer so that the calls below queue up behind it.
	release := holdWriter(q)
	type out struct {
		name string
		res  []Enqueued
		err  error
	}
	outs := make(chan out, 4)
	call := func(name string, keys ...string) {
		var jobs []NewJob
		for _, k := range keys {
			jobs = append(jobs, NewJob{Type: "t", Key: k})
		}
		res, err := q.EnqueueBatch(ctx, jobs)
		outs <- out{name, res, err}
	}
	go call("first", "first")
	eventually(t, "first call committing", func() bool { busy, n := groupState(q); return busy && n == 0 })
	go call("good-a", "a-1", "a-2")
	go call("bad", "bad-1", "bad-2", "bad-3")
	go call("good-b", "b-1")
	eventually(t, "three calls queued", func() bool { _, n := groupState(q); return n == 3 })
	release()
	for range 4 {
		o := waitFor(t, outs)
		switch {
		case o.name == "bad":
			if !errors.Is(o.err, boom) || o.res != nil {
				t.Errorf("bad call: %v, %v; want boom and no results", o.res, o.err)
			}
		case o.err != nil || len(o.res) == 0:
			t.Errorf("%s: %v, %v", o.name, o.res, o.err)
		}
	}
	for _, k := range []string{"first", "a-1", "a-2", "b-1"} {
		mustJob(t, q, k)
	}
	for _, k := range []string{"bad-1", "bad-2", "bad-3"} {
		if _, err := jobByRef(ctx, q, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("job %s: %v, want not found", k, err)
		}
	}
}

// TestEveryProducerProgresses runs producers that enqueue without pause:
// each must keep getting its calls back, through every hand-off of the turn
// to commit (and a caller may not keep the turn while calls keep coming).
func TestEveryProducerProgresses(t *testing.T) {
	t.Parallel()
	// Fsynced: while a group commits, the others are back with their next
	// call.
	q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	const producers = 8
	var calls [producers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := q.Enqueue(context.Background(), NewJob{Type: "t"}); err != nil {
					t.Error(err)
					return
				}
				calls[g].Add(1)
			}
		}()
	}
	eventually(t, "every producer has 20 calls back", func() bool {
		for g := range producers {
			if calls[g].Load() < 20 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
}

// TestCancelledCallLeavesTheQueue: a call cancelled while it waits for a
// group leaves with its context's error and enqueues nothing; the others
// commit.
func TestCancelledCallLeavesTheQueue(t *testing.T) {
	q, _ := newTestQueue(t)
	ctx := context.Background()
	release := holdWriter(q)
	errs := make(chan error, 3)
	go func() { _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: "first"}); errs <- err }()
	eventually(t, "first call committing", func() bool { busy, n := groupState(q); return busy && n == 0 })
	cctx, cancel := context.WithCancel(ctx)
	go func() { _, err := q.Enqueue(cctx, NewJob{Type: "t", Key: "cancelled"}); errs <- err }()
	go func() { _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: "last"}); errs <- err }()
	eventually(t, "two calls queued", func() bool { _, n := groupState(q); return n == 2 })
	cancel()
	eventually(t, "the cancelled call gone", func() bool { _, n := groupState(q); return n == 1 })
	release()
	var cancelled int
	for range 3 {
		if err := waitFor(t, errs); errors.Is(err, context.Canceled) {
			cancelled++
		} else if err != nil {
			t.Error(err)
		}
	}
	if cancelled != 1 {
		t.Errorf("%d calls cancelled, want 1", cancelled)
	}
	mustJob(t, q, "first")
	mustJob(t, q, "last")
	if _, err := jobByRef(ctx, q, "cancelled"); !errors.Is(err, ErrNotFound) {
		t.Errorf("cancelled job: %v, want not found", err)
	}
}

// holdWriter keeps q's writer connection in a transaction until release is
// called, so that enqueues queue up behind it.
func holdWriter(q *Store) (release func()) {
	holding, done := make(chan struct{}), make(chan struct{})
	go q.inTx(context.Background(), false, func(tx txn) error { close(holding); <-done; return nil })
	<-holding
	return func() { close(done) }
}

// groupState reports whether a group is being committed and how many calls
// wait for the next one.
func groupState(q *Store) (busy bool, waiting int) {
	q.groupMu.Lock()
	defer q.groupMu.Unlock()
	return q.group.busy, len(q.group.waiting)
}
