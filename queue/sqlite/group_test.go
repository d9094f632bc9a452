package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// TestGroupedCallFailsAlone forms a group of calls behind a busy writer and
// fails one of them halfway through its jobs: that call's jobs are all
// undone and it gets the error; the others commit, and the job counts hold
// what was committed, the jobs past the count mark before the group with
// them; a group of maxUncounted jobs or more writes them into job_counts
// and moves the mark, the failed call's left out.
func TestGroupedCallFailsAlone(t *testing.T) {
	for _, many := range []int{2, 150, maxUncounted} {
		t.Run(fmt.Sprint(many), func(t *testing.T) { testGroupedCallFailsAlone(t, many) })
	}
}

func testGroupedCallFailsAlone(t *testing.T, many int) {
	// A single enqueue alone (before, and first below) leaves its job past
	// the count mark: the group counts them.
	q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	mustEnqueue(t, q, NewJob{Type: "t", Key: "before"})
	boom := errors.New("boom")
	// The bad call fails at its last job, which goes in by a statement of
	// its own (the tail of a run of jobs shorter than batchRows).
	badKey := fmt.Sprint("bad-", many+1)
	testHookInsert = func(j NewJob) error {
		if j.Key == badKey {
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
	var aKeys, badKeys []string
	for i := range many {
		aKeys = append(aKeys, fmt.Sprint("a-", i+1))
	}
	for i := range many + 2 {
		badKeys = append(badKeys, fmt.Sprint("bad-", i+1))
	}
	// In this order: the bad call first, so that its savepoint, rolled
	// back, would undo the count of the jobs past the mark taken inside
	// it.
	go call("bad", badKeys...)
	eventually(t, "one call queued", func() bool { _, n := groupState(q); return n == 1 })
	go call("good-a", aKeys...)
	eventually(t, "two calls queued", func() bool { _, n := groupState(q); return n == 2 })
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
	for _, k := range append(aKeys, "first", "b-1") {
		mustJob(t, q, k)
	}
	for _, k := range badKeys {
		if _, err := jobByRef(ctx, q, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("job %s: %v, want not found", k, err)
		}
	}
	st, err := q.Stats(ctx)
	if err != nil || st.Counts[StatePending]["t"] != many+3 {
		t.Fatalf("Stats counts %v, %v; want %d pending t", st.Counts, err, many+3)
	}
	if many >= maxUncounted {
		var n int
		if err := q.r.QueryRowContext(ctx, `SELECT n FROM job_counts WHERE type = 't' AND state = 'pending'`).Scan(&n); err != nil || n != many+3 {
			t.Fatalf("job_counts holds %d pending t, %v; want %d: the mark moved past all", n, err, many+3)
		}
	}
	// A single enqueue after the group is counted too.
	mustEnqueue(t, q, NewJob{Type: "t", Key: "after"})
	if st, err := q.Stats(ctx); err != nil || st.Counts[StatePending]["t"] != many+4 {
		t.Fatalf("Stats counts %v, %v after a single enqueue; want %d pending t", st.Counts, err, many+4)
	}
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

// TestEnqueueTxFailsAlone: an EnqueueTx that fails at its last job leaves
// the caller's transaction as it was, its other jobs out and the counts
// right, and the caller's writes and the enqueues before it commit; the
// pools of the store are woken at the commit. EnqueueTx refuses a
// transaction that is not Store.Tx's. (Not parallel: it sets
// testHookInsert.)
func TestEnqueueTxFailsAlone(t *testing.T) {
	q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ctx := context.Background()
	boom := errors.New("boom")
	testHookInsert = func(j NewJob) error {
		if j.Key == "bad" {
			return boom
		}
		return nil
	}
	defer func() { testHookInsert = nil }()
	wake, unsubscribe := q.Subscribe()
	defer unsubscribe()
	err = q.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := EnqueueTx(ctx, tx, NewJob{Type: "t", Key: "kept"}); err != nil {
			return err
		}
		if _, err := EnqueueTx(ctx, tx, NewJob{Type: "t", Key: "lost"}, NewJob{Type: "t", Key: "bad"}); !errors.Is(err, boom) {
			t.Errorf("EnqueueTx with a failing job: %v, want boom", err)
		}
		select {
		case <-wake:
			t.Error("the pools were woken before the commit")
		default:
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, wake)
	if _, err := q.JobByKey(ctx, "kept"); err != nil {
		t.Errorf("kept: %v", err)
	}
	if _, err := q.JobByKey(ctx, "lost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("lost, of the failed call: %v, want not found", err)
	}
	if st, err := q.Stats(ctx); err != nil || st.Total[StatePending] != 1 {
		t.Errorf("Stats = %v, %v; want 1 pending", st.Total, err)
	}
	db, err := sql.Open("sqlite", dsn(q.abs, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := EnqueueTx(ctx, tx, NewJob{Type: "t", Key: "x"}); err == nil {
		t.Error("EnqueueTx in a transaction of another connection: no error")
	}
}
