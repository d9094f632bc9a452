package queue

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// CancelledError is the cause (context.Cause) of the context of an attempt
// stopped by RequestCancel: a command task's process group gets SIGTERM,
// then SIGKILL after its kill grace, as at a timeout. It unwraps to
// context.Canceled. The job ends cancelled, and is not retried.
type CancelledError struct {
	By string // who asked, as given to RequestCancel
}

func (e *CancelledError) Error() string { return "cancelled by " + e.By }
func (e *CancelledError) Unwrap() error { return context.Canceled }

const cancelStateSQL = `SELECT state FROM jobs WHERE id = ?`

const cancelPendingSQL = `UPDATE jobs SET state = 'cancelled', finished_at = ?1, cancel_requested_at = ?1, cancelled_by = ?2,
	last_error = 'cancelled by ' || ?2
WHERE id = ?3 AND state = 'pending'`

// cancelRunningSQL records the request on a running job; a second request
// keeps the first one's time and author.
const cancelRunningSQL = `UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, ?1), cancelled_by = coalesce(cancelled_by, ?2)
WHERE id = ?3 AND state = 'running'`

// RequestCancel cancels job id on behalf of by (a person or program, for
// the record) and returns the state the job was in. A pending job is
// cancelled at once. A running job is marked: the pool holding its lease,
// in any process, notices within its WatchInterval, cancels the attempt's
// context with a *CancelledError and records the job cancelled; if that
// pool is gone, the job ends cancelled when its lease is reclaimed. A
// running job may still end done (or dead) if it finishes before its pool
// notices. A job already done, dead or cancelled is left as it is. The
// error wraps ErrNotFound when no job has that id. The commit is fsynced.
func (q *Queue) RequestCancel(ctx context.Context, id int64, by string) (State, error) {
	var st State
	err := q.inTx(ctx, true, func(tx txn) error {
		if err := tx.QueryRowContext(ctx, cancelStateSQL, id).Scan(&st); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		now := ms(q.clock.Now())
		switch st {
		case StatePending:
			_, err := tx.ExecContext(ctx, cancelPendingSQL, now, by, id)
			return err
		case StateRunning:
			_, err := tx.ExecContext(ctx, cancelRunningSQL, now, by, id)
			return err
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("cancel job %d: %w", id, err)
	}
	return st, nil
}

// cancelRequestsSQL finds the cancel requests on the jobs a pool runs,
// through jobs_cancel_requested.
const cancelRequestsSQL = `SELECT id, attempt, cancelled_by FROM jobs
WHERE owner = ? AND state = 'running' AND cancel_requested_at IS NOT NULL`

// finishCancelledSQL records an attempt stopped by a cancel, fenced like
// the other outcome statements.
const finishCancelledSQL = `UPDATE jobs SET state = 'cancelled', owner = NULL, lease_until = NULL, finished_at = ?, last_error = ?
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`

// settleCancelledSQL ends cancelled the jobs that a retry or a release at
// shutdown made pending although their cancel had been requested, before
// their pool noticed it: a cancelled job never runs again.
const settleCancelledSQL = `UPDATE jobs SET state = 'cancelled', finished_at = ?1
WHERE id IN (SELECT value FROM json_each(?2)) AND state = 'pending' AND cancel_requested_at IS NOT NULL`

// settleCancelled applies settleCancelledSQL to the jobs of rs that went
// back to pending (ok[i]: the fence held).
func settleCancelled(ctx context.Context, tx txn, rs []result, ok []bool, now time.Time) error {
	var ids []int64
	for i, r := range rs {
		if ok[i] && (r.outcome == OutcomeRetry || r.outcome == OutcomeReleased) {
			ids = append(ids, r.job.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	arg, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, settleCancelledSQL, ms(now), string(arg)); err != nil {
		return fmt.Errorf("settle cancelled jobs: %w", err)
	}
	return nil
}

// stops holds the contexts of a pool's running attempts, so that a cancel
// request reaches them. It is safe for concurrent use: workers start and end
// attempts, the loop delivers requests.
type stops struct {
	mu      sync.Mutex
	running map[int64]runningAttempt // by job id
	// early holds requests on jobs claimed but not yet started (prefetched):
	// they end cancelled without running. Each delivery replaces it, so a
	// request on a job that has since ended is dropped.
	early map[int64]*CancelledError
}

type runningAttempt struct {
	attempt int
	cancel  context.CancelCauseFunc
}

// start registers j's attempt, whose context cancel cancels. It returns the
// cancel requested before the attempt started, if any.
func (s *stops) start(j *Job, cancel context.CancelCauseFunc) *CancelledError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.early[j.ID]; e != nil {
		delete(s.early, j.ID)
		return e
	}
	if s.running == nil {
		s.running = map[int64]runningAttempt{}
	}
	s.running[j.ID] = runningAttempt{attempt: j.Attempt, cancel: cancel}
	return nil
}

// end forgets j's attempt.
func (s *stops) end(j *Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.running[j.ID]; ok && a.attempt == j.Attempt {
		delete(s.running, j.ID)
	}
}

// cancelRequest is a cancel request on one attempt.
type cancelRequest struct {
	id      int64
	attempt int
	by      string
}

// deliver cancels the running attempts that reqs name and keeps the others
// for when they start. It returns the requests that cancelled an attempt.
func (s *stops) deliver(reqs []cancelRequest) []cancelRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var delivered []cancelRequest
	early := map[int64]*CancelledError{}
	for _, r := range reqs {
		e := &CancelledError{By: r.by}
		if a, ok := s.running[r.id]; ok && a.attempt == r.attempt {
			a.cancel(e)
			delete(s.running, r.id)
			delivered = append(delivered, r)
			continue
		}
		early[r.id] = e
	}
	s.early = early
	return delivered
}

// stopCancelled looks for cancel requests on the jobs this pool runs and
// cancels their attempts. The loop calls it when another connection
// committed (the watch's wake-up) and at each heartbeat, as a fallback.
func (l *loop) stopCancelled(ctx context.Context) {
	p := l.p
	if l.inflight == 0 {
		return
	}
	reqs, err := p.cancelRequests(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.WarnContext(ctx, "look for cancel requests", "err", err)
		}
		return
	}
	for _, r := range p.stops.deliver(reqs) {
		p.log.InfoContext(ctx, "job cancel requested, stopping it", "job_id", r.id, "attempt", r.attempt, "by", r.by)
	}
}

func (p *Pool) cancelRequests(ctx context.Context) ([]cancelRequest, error) {
	rows, err := p.q.r.QueryContext(ctx, cancelRequestsSQL, p.cfg.Owner)
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", err)
	}
	defer rows.Close()
	var out []cancelRequest
	for rows.Next() {
		var r cancelRequest
		var by sql.NullString
		if err := rows.Scan(&r.id, &r.attempt, &by); err != nil {
			return nil, fmt.Errorf("cancel requests: %w", err)
		}
		r.by = by.String
		out = append(out, r)
	}
	return out, rows.Err()
}

// cancelledText is the error recorded for an attempt stopped by e: the
// handler's error, which for a command already names the cause, prefixed
// with who cancelled it when it does not.
func cancelledText(e *CancelledError, errText string) string {
	switch {
	case errText == "":
		return e.Error()
	case strings.Contains(errText, e.Error()):
		return errText
	}
	return e.Error() + ": " + errText
}
