package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// storeLiveSQL stores running attempts' output tails in one statement, each
// replacing its job's, fenced on (id, owner, attempt, running).
const storeLiveSQL = `INSERT INTO live_output (job_id, attempt, output, updated_at)
SELECT jobs.id, jobs.attempt, l.output, $5 FROM unnest($2::bigint[], $3::int[], $4::text[]) AS l(id, attempt, output)
JOIN jobs ON jobs.id = l.id AND jobs.attempt = l.attempt AND jobs.owner = $1 AND jobs.state = 'running'
ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, output = excluded.output, updated_at = excluded.updated_at`

// endLiveSQL deletes the live output of attempts that ended.
const endLiveSQL = `DELETE FROM live_output l USING unnest($1::bigint[], $2::int[]) AS e(id, attempt)
WHERE l.job_id = e.id AND l.attempt = e.attempt`

// liveOutputSQL reads a job's live output while the attempt that wrote it
// runs.
const liveOutputSQL = `SELECT l.attempt, l.output, l.updated_at FROM live_output l
JOIN jobs j ON j.id = l.job_id AND j.attempt = l.attempt AND j.state = 'running'
WHERE l.job_id = $1`

// purgeLiveSQL deletes what reclaimed attempts left.
const purgeLiveSQL = `DELETE FROM live_output l WHERE NOT EXISTS (
	SELECT 1 FROM jobs j WHERE j.id = l.job_id AND j.attempt = l.attempt AND j.state = 'running')`

// queueStoreLive queues storeLiveSQL for ls in b, if any.
func queueStoreLive(b *pgx.Batch, owner string, ls []store.LiveOutput, now time.Time) {
	if len(ls) == 0 {
		return
	}
	ids, attempts, outputs := make([]int64, len(ls)), make([]int32, len(ls)), make([]string, len(ls))
	for i, l := range ls {
		ids[i], attempts[i], outputs[i] = l.JobID, int32(l.Attempt), capText(l.Output)
	}
	b.Queue(storeLiveSQL, owner, ids, attempts, outputs, now)
}

// queueEndLive queues endLiveSQL for ls in b, if any.
func queueEndLive(b *pgx.Batch, ls []store.LiveOutput) {
	if len(ls) == 0 {
		return
	}
	ids, attempts := make([]int64, len(ls)), make([]int32, len(ls))
	for i, l := range ls {
		ids[i], attempts[i] = l.JobID, int32(l.Attempt)
	}
	b.Queue(endLiveSQL, ids, attempts)
}
