package sqlite

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// Concurrent enqueues share transactions (group commit): calls arriving while
// one commits queue, and the next transaction takes them all, for one WAL
// append and one fsync. Each call returns once its commit is fsynced, and is
// all or nothing by a savepoint of its own. The caller that finds no group
// committing commits the next, then hands the turn to the first call that
// arrived meanwhile; none commits two groups.

const (
	savepointSQL  = "SAVEPOINT enqueue_call"
	rollbackToSQL = "ROLLBACK TO enqueue_call"
	releaseSQL    = "RELEASE enqueue_call"
)

// inSavepoint runs fn in a savepoint of t: fn's error (fnErr) undoes its rows
// and counts alone. err is the savepoint's own failure, which fails t.
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

type enqueueCall struct {
	ctx  context.Context
	jobs []store.NewJob
	now  time.Time
	res  []store.Enqueued
	err  error
	done chan struct{} // closed once the call's group committed
	turn chan struct{} // closed when the caller is to commit the next group
}

// groupQueue holds the calls waiting for the next group; busy from when a
// caller starts a group until one finds no call to hand the turn to.
type groupQueue struct {
	waiting []*enqueueCall
	busy    bool
}

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
	// Cancelled. Not handed the turn yet: leave. Handed it: commit for
	// the others. Taken into a group: its rows may commit, so wait.
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

// commitTurn commits every waiting call as one group, hands the turn on, and
// returns c's result.
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
	// A group outlives one caller's cancellation (others' jobs are in it);
	// the busy timeout bounds its lock waits. A lone call keeps its ctx.
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
