package pgtest

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// millionSQL fills the jobs table in one statement: $1 done jobs of four
// types, one in a hundred of ten schedules, finished one millisecond apart
// from $2, then $3 ready jobs.
const millionSQL = `INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, started_at, finished_at)
SELECT 'bulk|' || i, 'type' || (i % 4), '{}', CASE WHEN i <= $1::int THEN 'done' ELSE 'pending' END, CASE WHEN i <= $1::int THEN 1 ELSE 0 END, 5, 0,
	t, CASE WHEN i % 100 = 0 THEN 'schedule' || (i / 100 % 10) END, '', CASE WHEN i % 100 = 0 THEN t END,
	t, CASE WHEN i <= $1::int THEN t END, CASE WHEN i <= $1::int THEN t END
FROM generate_series(1, $1::int + $3::int) AS i, LATERAL (SELECT $2::timestamptz + i * interval '1 millisecond' AS t) AS x`

// FillMillion inserts done jobs and ready ones into the migrated schema
// of dsn, all at once (jobs of types type0 to type3, one in a hundred of
// the schedules schedule0 to schedule9), counts them into job_counts as
// the engine would have, and analyses: a large queue for benchmarks.
func FillMillion(ctx context.Context, dsn string, done, ready int, start time.Time) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, millionSQL, done, start, ready); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO job_counts (type, state, slot, n)
SELECT type, state, 1, count(*) FROM jobs WHERE key LIKE 'bulk|%' GROUP BY type, state`); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, `VACUUM ANALYZE jobs`)
	return err
}
