package postgres

import (
	"context"
	"time"

	"scheduler/queue/store"
)

// Redact is redact, for tests.
var Redact = redact

// AlarmQueries are the reads of the alarms' evaluation, for the plan test,
// with arguments.
var AlarmQueries = map[string]struct {
	SQL   string
	Args  []any
	Index string
}{
	"instant jobs":  {instantJobsSQL, []any{"s", t1, t2, 10}, "jobs_schedule_at"},
	"dead jobs":     {deadJobsSQL, []any{t1, 10}, "jobs_dead_finished"},
	"skips between": {skipsBetweenSQL, []any{"s", t1, t2, "misfire", 10}, "skips_schedule_at"},
	"open alarms":   {openAlarmsSQL, []any{10}, "alarms_open"},
	"alarms of":     {alarmsOfSQL, []any{"s", 10}, "alarms_schedule"},
	"last success":  {lastSuccessSQL, []any{"s"}, "jobs_schedule_at"},
}

var t1, t2 = time.Unix(0, 0).UTC(), time.Unix(3600, 0).UTC()

// Channel is the store's NOTIFY channel, for tests.
func (s *Store) Channel() string { return s.channel }

// CountJobs counts every job by state and type, row by row: the truth that
// job_counts must agree with (see storetest.JobCounter).
func (s *Store) CountJobs(ctx context.Context) (map[store.State]map[string]int, error) {
	rows, err := s.pool.Query(ctx, statsSQL)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[store.State]map[string]int{}
	for rows.Next() {
		var st store.State
		var typ string
		var n int
		if err := rows.Scan(&st, &typ, &n); err != nil {
			return nil, err
		}
		if out[st] == nil {
			out[st] = map[string]int{}
		}
		out[st][typ] = n
	}
	return out, rows.Err()
}

// millionSQL fills the jobs table in one statement: $1 done jobs of four
// types, one in a hundred of ten schedules, finished one millisecond apart
// from $2, then $3 ready jobs.
const millionSQL = `INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, started_at, finished_at)
SELECT 'bulk|' || i, 'type' || (i % 4), '{}', CASE WHEN i <= $1::int THEN 'done' ELSE 'pending' END, CASE WHEN i <= $1::int THEN 1 ELSE 0 END, 5, 0,
	t, CASE WHEN i % 100 = 0 THEN 'schedule' || (i / 100 % 10) END, '', CASE WHEN i % 100 = 0 THEN t END,
	t, CASE WHEN i <= $1::int THEN t END, CASE WHEN i <= $1::int THEN t END
FROM generate_series(1, $1::int + $3::int) AS i, LATERAL (SELECT $2::timestamptz + i * interval '1 millisecond' AS t) AS x`

// FillMillion inserts done jobs done and pending ready ones, all at once,
// counts them into job_counts as the engine would have, and analyses.
func FillMillion(ctx context.Context, s *Store, done, ready int, start time.Time) error {
	if _, err := s.pool.Exec(ctx, millionSQL, done, start, ready); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO job_counts (type, state, slot, n)
SELECT type, state, 1, count(*) FROM jobs WHERE key LIKE 'bulk|%' GROUP BY type, state`); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `VACUUM ANALYZE jobs`)
	return err
}
