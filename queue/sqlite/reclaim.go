package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

const expiredSQL = `SELECT id, attempt, max_attempts, owner, coalesce(started_at, 0) FROM jobs
WHERE state = 'running' AND lease_until < ?`

// reclaimJobSQL returns an expired lease to pending, dead or cancelled. The
// attempt stays spent: the worker may have run the job to the end.
const reclaimJobSQL = `UPDATE jobs SET
	state = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN attempt >= max_attempts THEN 'dead' ELSE 'pending' END,
	finished_at = CASE WHEN cancel_requested_at IS NOT NULL OR attempt >= max_attempts THEN ?1 ELSE NULL END,
	run_at = ?1, last_error = ?2, owner = NULL, lease_until = NULL
WHERE id = ?3 AND owner = ?4 AND attempt = ?5 AND state = 'running'
RETURNING type, state, fanin_id`

const reclaimAttemptSQL = `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
VALUES (?, ?, ?, ?, ?, 'lease_expired', ?)`

const latestLeaseSQL = `SELECT max(lease_until) FROM jobs WHERE state = 'running'`

// reclaimExpired takes back the leases expired at now, as the store's Leases
// judge them.
func (s *Store) reclaimExpired(ctx context.Context, tx txn, now time.Time, f store.FanInDeltas) ([]store.Reclaimed, error) {
	expired, err := store.Expired(ctx, s.Base, tx, now)
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	return reclaim(ctx, tx, now, expired, f)
}

// reclaim takes back the leases ending before expired, recording an attempt
// for each and the fan-in members' moves in f.
func reclaim(ctx context.Context, tx txn, now, expired time.Time, f store.FanInDeltas) ([]store.Reclaimed, error) {
	var started []int64
	rs, err := store.Collect(store.Read(wrap(tx.query(ctx, expiredSQL, ms(expired)))), func(r store.Row) (store.Reclaimed, error) {
		var rc store.Reclaimed
		var maxAttempts int
		var st int64
		err := r.Scan(&rc.ID, &rc.Attempt, &maxAttempts, &rc.Owner, &st)
		rc.Dead = rc.Attempt >= maxAttempts
		started = append(started, st)
		return rc, err
	})
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	for i, r := range rs {
		msg := "lease expired: worker " + r.Owner + " stopped heartbeating"
		var typ string
		var to store.State
		var fanIn sql.NullInt64
		if err := tx.queryRow(ctx, reclaimJobSQL, ms(now), msg, r.ID, r.Owner, r.Attempt).Scan(&typ, &to, &fanIn); err != nil {
			return nil, fmt.Errorf("reclaim job %d: %w", r.ID, err)
		}
		tx.counts.Move(typ, store.StateRunning, to, 1)
		f.Move(fanIn.Int64, store.StateRunning, to)
		if _, err := tx.exec(ctx, reclaimAttemptSQL, r.ID, r.Attempt, r.Owner, started[i], ms(now), msg); err != nil {
			return nil, fmt.Errorf("reclaim job %d: %w", r.ID, err)
		}
	}
	return rs, nil
}
