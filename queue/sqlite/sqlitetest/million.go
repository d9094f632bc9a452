// Package sqlitetest builds SQLite queue files for tests and benchmarks of
// any package.
package sqlitetest

import (
	"context"
	"database/sql"
	"time"

	_ "modernc.org/sqlite" // the driver the engine uses
)

// millionSQL fills the jobs table in one statement: ?1 done jobs of four
// types, one in a hundred of ten schedules, finished one millisecond apart
// from ?2, then ?3 ready jobs. countSQL then counts them by state, as the
// engine counts the jobs past the count mark, and moves the mark past them:
// the jobs past it count as pending.
const millionSQL = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 + ?3)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, started_at, finished_at)
SELECT 'bulk|' || i, 'type' || (i % 4), '{}', CASE WHEN i <= ?1 THEN 'done' ELSE 'pending' END, CASE WHEN i <= ?1 THEN 1 ELSE 0 END, 5, 0,
	?2 + i, CASE WHEN i % 100 = 0 THEN 'schedule' || (i / 100 % 10) END, '', CASE WHEN i % 100 = 0 THEN ?2 + i END,
	?2 + i, CASE WHEN i <= ?1 THEN ?2 + i END, CASE WHEN i <= ?1 THEN ?2 + i END
FROM n`

// countSQL adds the jobs past the count mark to the job counts, by type and
// state, and moves the mark past them.
const countSQL = `INSERT INTO job_counts (type, state, n)
SELECT type, state, count(*) FROM jobs WHERE id > (SELECT last_id FROM job_counts_mark) GROUP BY type, state
ON CONFLICT (type, state) DO UPDATE SET n = n + excluded.n;
UPDATE job_counts_mark SET last_id = (SELECT coalesce(max(id), 0) FROM jobs);`

// FillMillion inserts done jobs and ready ones into the migrated queue
// file at path, which no store may have open, all at once (jobs of types
// type0 to type3, one in a hundred of the schedules schedule0 to
// schedule9), and analyses: a large queue for benchmarks. It is the
// SQLite twin of pgtest.FillMillion.
func FillMillion(ctx context.Context, path string, done, ready int, start time.Time) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, millionSQL, done, start.UnixMilli(), ready); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, countSQL); err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "ANALYZE")
	return err
}
