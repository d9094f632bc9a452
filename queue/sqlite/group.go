package sqlite

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Enqueues from many goroutines share transactions (group commit): the
// writer connection does one transaction at a time, so while one runs, the
// calls that arrive queue up, and the next transaction takes all of them.
// Each call still returns only once the commit holding its jobs is done
// (fsynced), and each is all or nothing on its
// own: a savepoint per call undoes a failed call's rows alone. One
// transaction per group instead of one per call is one WAL append and, for
// fsynced enqueues, one fsync per group.
//
// The caller that finds no group being committed commits the next one; when
// it is done, it hands the turn to the first call that arrived meanwhile,
// whose caller commits the group after, and returns. No caller commits more
// than one group.

// A savepoint per call in a group, and per EnqueueTx (see inSavepoint).
const (
	savepointSQL  = "SAVEPOINT enqueue_call"
	rollbackToSQL = "ROLLBACK TO enqueue_call"
	releaseSQL    = "RELEASE enqueue_call"
)

// inSavepoint runs fn in a savepoint of t: an error of fn (fnErr) undoes
// its rows and its changes to the job counts alone, and t goes on. err is
// a failure of the savepoint itself, which fails t.
func (t txn) inSavepoint(ctx context.Context, fn func() error) (fnErr, err error) {
	if _, err := t.exec(ctx, savepointSQL); err != nil {
		return nil, err
	}
	counted, inserted, n := maps.Clone(t.counts), maps.Clone(t.tail.inserted), t.tail.n
	if fnErr = fn(); fnErr != nil {
		if _, err := t.exec(ctx, rollbackToSQL); err != nil {
			return fnErr, err
		}
		clear(t.counts)
		maps.Copy(t.counts, counted)
		clear(t.tail.inserted)
		maps.Copy(t.tail.inserted, inserted)
		t.tail.n = n
	}
	_, err = t.exec(ctx, releaseSQL)
	return fnErr, err
}

// enqueueCall is one EnqueueBatch waiting for its group's commit.
type enqueueCall struct {
	ctx  context.Context
	jobs []store.NewJob
	now  time.Time
	res  []store.Enqueued
	err  error
	done chan struct{} // closed once the call's group has committed
	turn chan struct{} // closed when the call's caller is to commit the next group
}

// groupQueue holds the calls waiting for the next group. busy is true from
// the moment a caller starts committing a group until a caller finds no call
// left to hand the turn to.
type groupQueue struct {
	waiting []*enqueueCall
	busy    bool
}

// enqueueGrouped runs c in a group transaction and waits for its result.
func (s *Store) enqueueGrouped(c *enqueueCall) ([]store.Enqueued, error) {
	s.groupMu.Lock()
	s.group.waiting = append(s.group.waiting, c)
	if !s.group.busy {
		s.group.busy = true
		s.groupMu.Unlock()
		return s.commitTurn(c)
	}
	s.groupMu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-c.turn:
		return s.commitTurn(c)
	case <-c.ctx.Done():
	}
	// Cancelled. Still waiting, and not handed the turn: leave. Given the
	// turn: commit anyway, the others wait for it (c itself is dropped, its
	// context being done). Taken into a group: its rows may commit, so wait
	// for the result.
	s.groupMu.Lock()
	select {
	case <-c.turn:
		s.groupMu.Unlock()
		return s.commitTurn(c)
	default:
	}
	for i, w := range s.group.waiting {
		if w == c {
			s.group.waiting = append(s.group.waiting[:i], s.group.waiting[i+1:]...)
			s.groupMu.Unlock()
			return nil, c.ctx.Err()
		}
	}
	s.groupMu.Unlock()
	<-c.done
	return c.res, c.err
}

// commitTurn commits every waiting call, c among them, as one group, then
// hands the turn on, and returns c's result.
func (s *Store) commitTurn(c *enqueueCall) ([]store.Enqueued, error) {
	s.groupMu.Lock()
	calls := s.group.waiting
	s.group.waiting = nil
	s.groupMu.Unlock()
	s.commitGroup(calls)
	s.groupMu.Lock()
	if len(s.group.waiting) > 0 {
		close(s.group.waiting[0].turn)
	} else {
		s.group.busy = false
	}
	s.groupMu.Unlock()
	<-c.done
	return c.res, c.err
}

// commitGroup commits calls in one transaction and closes their done.
func (s *Store) commitGroup(calls []*enqueueCall) {
	defer func() {
		for _, c := range calls {
			close(c.done)
		}
	}()
	var live []*enqueueCall
	for _, c := range calls {
		if c.err = c.ctx.Err(); c.err == nil {
			live = append(live, c)
		}
	}
	if len(live) == 0 {
		return
	}
	// A group outlives any one caller's cancellation: the others' jobs are
	// in it. Its lock waits are bounded by the busy timeout. A call alone
	// keeps its own context.
	ctx := live[0].ctx
	if len(live) > 1 {
		ctx = context.WithoutCancel(ctx)
	}
	err := s.inTx(ctx, true, func(tx txn) error {
		for _, c := range live {
			if len(live) == 1 {
				c.res, c.err = insertJobs(ctx, tx, c.jobs, c.now)
				return c.err
			}
			var err error
			if c.err, err = tx.inSavepoint(ctx, func() error {
				c.res, c.err = insertJobs(ctx, tx, c.jobs, c.now)
				return c.err
			}); c.err != nil {
				c.res = nil
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range live {
		switch {
		case c.err != nil:
			c.err = fmt.Errorf("enqueue: %w", c.err)
		case err != nil:
			c.res, c.err = nil, fmt.Errorf("enqueue: %w", err)
		}
	}
	if err == nil {
		store.Wake(s.Base)
	}
}
