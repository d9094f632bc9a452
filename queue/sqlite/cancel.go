package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

const cancelStateSQL = `SELECT state FROM jobs WHERE id = ?`

const cancelPendingSQL = `UPDATE jobs SET state = 'cancelled', finished_at = ?1, cancel_requested_at = ?1, cancelled_by = ?2,
	last_error = 'cancelled by ' || ?2
WHERE id = ?3 AND state = 'pending'
RETURNING type`

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
func (s *Store) RequestCancel(ctx context.Context, id int64, by string) (store.State, error) {
	var st store.State
	err := s.inTx(ctx, true, func(tx txn) error {
		if err := tx.queryRow(ctx, cancelStateSQL, id).Scan(&st); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		now := ms(s.clock.Now())
		switch st {
		case store.StatePending:
			rows, err := tx.query(ctx, cancelPendingSQL, now, by, id)
			_, err = tx.moveTypes(rows, err, store.StatePending, store.StateCancelled)
			return err
		case store.StateRunning:
			_, err := tx.exec(ctx, cancelRunningSQL, now, by, id)
			return err
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("cancel job %d: %w", id, err)
	}
	if st == store.StateRunning {
		s.signalCancel()
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
WHERE id IN (SELECT value FROM json_each(?2)) AND state = 'pending' AND cancel_requested_at IS NOT NULL
RETURNING type`

// settleCancelled applies settleCancelledSQL to the jobs of rs that went
// back to pending (ok[i]: the fence held).
// CancelRequests returns the cancel requests on the jobs owner runs.
func (s *Store) CancelRequests(ctx context.Context, owner string) ([]store.CancelRequest, error) {
	rows, err := s.r.QueryContext(ctx, cancelRequestsSQL, owner)
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", err)
	}
	defer rows.Close()
	var out []store.CancelRequest
	for rows.Next() {
		var r store.CancelRequest
		var by sql.NullString
		if err := rows.Scan(&r.ID, &r.Attempt, &by); err != nil {
			return nil, fmt.Errorf("cancel requests: %w", err)
		}
		r.By = by.String
		out = append(out, r)
	}
	return out, rows.Err()
}

func settleCancelled(ctx context.Context, tx txn, rs []store.Result, ok []bool, now time.Time) error {
	var ids []int64
	for i, r := range rs {
		if ok[i] && (r.Outcome == store.OutcomeRetry || r.Outcome == store.OutcomeReleased) {
			ids = append(ids, r.Job.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	arg, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	rows, err := tx.query(ctx, settleCancelledSQL, ms(now), string(arg))
	if _, err := tx.moveTypes(rows, err, store.StatePending, store.StateCancelled); err != nil {
		return fmt.Errorf("settle cancelled jobs: %w", err)
	}
	return nil
}
