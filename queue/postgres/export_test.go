package postgres

import "time"

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
