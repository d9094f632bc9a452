package postgres

import (
	"github.com/scheduler-run/scheduler/queue/store"
)

// reclaimSQL returns expired leases to pending, dead or cancelled and records
// the lost attempts, which stay spent: the worker may have run the job to the
// end. Rows another transaction holds (a completion under way) are left for
// later, so reclaim waits for no one.
const reclaimSQL = `WITH x AS (
	SELECT id, attempt, max_attempts, owner, started_at FROM jobs
	WHERE state = 'running' AND lease_until < $2
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE jobs SET
		state = CASE WHEN jobs.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN jobs.attempt >= jobs.max_attempts THEN 'dead' ELSE 'pending' END,
		finished_at = CASE WHEN jobs.cancel_requested_at IS NOT NULL OR jobs.attempt >= jobs.max_attempts THEN $1::timestamptz END,
		run_at = $1, last_error = 'lease expired: worker ' || x.owner || ' stopped heartbeating', owner = NULL, lease_until = NULL
	FROM x WHERE jobs.id = x.id
	RETURNING x.id, x.attempt, x.max_attempts, x.owner, x.started_at, jobs.last_error, jobs.type, jobs.state, jobs.fanin_id
), a AS (
	INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
	SELECT id, attempt, owner, coalesce(started_at, $1), $1, 'lease_expired', last_error FROM u
)
SELECT id, attempt, owner, attempt >= max_attempts, type, state, fanin_id FROM u ORDER BY id`

const latestLeaseSQL = `SELECT max(lease_until) FROM jobs WHERE state = 'running'`

// collectReclaimed reads reclaimSQL's rows, counting the jobs in d and the
// fan-in members' moves in f.
func collectReclaimed(d store.CountDeltas, f store.FanInDeltas, r store.Reading) ([]store.Reclaimed, error) {
	return store.Collect(r, func(row store.Row) (store.Reclaimed, error) {
		var rc store.Reclaimed
		var typ string
		var state store.State
		var fanIn *int64
		err := row.Scan(&rc.ID, &rc.Attempt, &rc.Owner, &rc.Dead, &typ, &state, &fanIn)
		if err == nil {
			d.Move(typ, store.StateRunning, state, 1)
			if fanIn != nil {
				f.Move(*fanIn, store.StateRunning, state)
			}
		}
		return rc, err
	})
}
