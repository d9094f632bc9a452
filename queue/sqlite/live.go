package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// storeLiveSQL stores running attempts' output tails in one statement, each
// replacing its job's, fenced on (id, owner, attempt, running). WHERE true
// tells SQLite's parser the ON CONFLICT is the upsert's, not the join's.
const storeLiveSQL = `INSERT INTO live_output (job_id, attempt, output, updated_at)
SELECT jobs.id, jobs.attempt, l.value->>2, ?3 FROM json_each(?1) l
JOIN jobs ON jobs.id = l.value->>0 AND jobs.attempt = l.value->>1 AND jobs.owner = ?2 AND jobs.state = 'running'
WHERE true
ON CONFLICT (job_id) DO UPDATE SET attempt = excluded.attempt, output = excluded.output, updated_at = excluded.updated_at`

// endLiveSQL deletes the live output of attempts that ended.
const endLiveSQL = `DELETE FROM live_output WHERE (job_id, attempt) IN (SELECT value->>0, value->>1 FROM json_each(?))`

// liveOutputSQL reads a job's live output while the attempt that wrote it
// runs.
const liveOutputSQL = `SELECT l.attempt, l.output, l.updated_at FROM live_output l
JOIN jobs j ON j.id = l.job_id AND j.attempt = l.attempt AND j.state = 'running'
WHERE l.job_id = ?`

// purgeLiveSQL deletes what reclaimed attempts left.
const purgeLiveSQL = `DELETE FROM live_output WHERE NOT EXISTS (
	SELECT 1 FROM jobs j WHERE j.id = live_output.job_id AND j.attempt = live_output.attempt AND j.state = 'running')`

// storeLive runs storeLiveSQL for ls, if any.
func storeLive(ctx context.Context, tx txn, owner string, ls []store.LiveOutput, now time.Time) error {
	if len(ls) == 0 {
		return nil
	}
	rows := make([][3]any, len(ls))
	for i, l := range ls {
		rows[i] = [3]any{l.JobID, l.Attempt, store.CapText(l.Output)}
	}
	arg, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	if _, err := tx.exec(ctx, storeLiveSQL, string(arg), owner, ms(now)); err != nil {
		return fmt.Errorf("store live output: %w", err)
	}
	return nil
}

// endLive runs endLiveSQL for ls, if any.
func endLive(ctx context.Context, tx txn, ls []store.LiveOutput) error {
	if len(ls) == 0 {
		return nil
	}
	rows := make([][2]any, len(ls))
	for i, l := range ls {
		rows[i] = [2]any{l.JobID, l.Attempt}
	}
	arg, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	if _, err := tx.exec(ctx, endLiveSQL, string(arg)); err != nil {
		return fmt.Errorf("delete live output: %w", err)
	}
	return nil
}
