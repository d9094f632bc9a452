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
