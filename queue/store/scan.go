package store

import (
	"database/sql"
	"strings"
	"time"
)

// The column lists below are what the scanners after them read, in order;
// every engine selects them.

// JobColumns are the columns of a Job, as ScanJob reads them.
const JobColumns = `id, key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item,
scheduled_at, lease_until, owner, last_error, created_at, started_at, finished_at, version, retried_at, alarm_key, discarded_at, discarded_by`

// AlarmColumns are the columns of an Alarm, as ScanAlarm reads them.
const AlarmColumns = `id, key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at`

// SkipColumns are the columns of a Skip, as ScanSkip reads them.
const SkipColumns = `schedule, item, scheduled_at, reason, recorded_at`

// Qualified returns the columns of a list qualified by table: "t.id, t.key".
func Qualified(table, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = table + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// ScanJob reads a row of JobColumns.
func ScanJob(r Row) (*Job, error) { return scanJob(r) }

// ScanClaimedJob reads a row of JobColumns and the job's fan-in id (NULL:
// none), as a claim returns it.
func ScanClaimedJob(r Row) (*Job, error) {
	var fanIn *int64
	var trace sql.NullString
	j, err := scanJob(r, &fanIn, &trace)
	if err == nil && fanIn != nil {
		j.FanInID = *fanIn
	}
	if err == nil {
		j.Trace = trace.String
	}
	return j, err
}

func scanJob(r Row, extra ...any) (*Job, error) {
	var j Job
	var payload string
	var schedule, owner, alarmKey, discardedBy sql.NullString
	var runAt, scheduledAt, leaseUntil, createdAt, startedAt, finishedAt, retriedAt, discardedAt Time
	dest := append([]any{&j.ID, &j.Key, &j.Type, &payload, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority,
		&runAt, &schedule, &j.Item, &scheduledAt, &leaseUntil, &owner, &j.LastError, &createdAt,
		&startedAt, &finishedAt, &j.Version, &retriedAt, &alarmKey, &discardedAt, &discardedBy}, extra...)
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	j.Payload = []byte(payload)
	j.RunAt, j.Schedule, j.ScheduledAt, j.LeaseUntil = runAt.Time, schedule.String, scheduledAt.Time, leaseUntil.Time
	if j.State == StateRunning {
		// A done job keeps its worker in owner, for its attempt history.
		j.Owner = owner.String
	}
	j.CreatedAt, j.StartedAt, j.FinishedAt, j.RetriedAt = createdAt.Time, startedAt.Time, finishedAt.Time, retriedAt.Time
	j.AlarmKey = alarmKey.String
	j.DiscardedAt, j.DiscardedBy = discardedAt.Time, discardedBy.String
	return &j, nil
}

// ScanAlarm reads a row of AlarmColumns.
func ScanAlarm(r Row) (Alarm, error) { return scanAlarm(r) }

func scanAlarm(r Row, extra ...any) (Alarm, error) {
	var a Alarm
	var at, raised Time
	var detail string
	dest := append([]any{&a.ID, &a.Key, &a.Schedule, &a.Item, &at, &a.Kind, &a.JobID, &a.Error, &detail, &a.Open, &raised}, extra...)
	if err := r.Scan(dest...); err != nil {
		return a, err
	}
	a.ScheduledAt, a.Detail, a.RaisedAt = at.Time, []byte(detail), raised.Time
	return a, nil
}

// ScanOpenAlarm reads AlarmColumns, then the job's state and finish (NULL: no
// job) and whether a notification is under way.
func ScanOpenAlarm(r Row) (OpenAlarm, error) {
	var state sql.NullString
	var finished Time
	var notifying bool
	a, err := scanAlarm(r, &state, &finished, &notifying)
	return OpenAlarm{Alarm: a, JobState: State(state.String), JobFinishedAt: finished.Time, Notifying: notifying}, err
}

// ScanSkip reads a row of SkipColumns.
func ScanSkip(r Row) (Skip, error) {
	var s Skip
	var at, rec Time
	if err := r.Scan(&s.Schedule, &s.Item, &at, &s.Reason, &rec); err != nil {
		return s, err
	}
	s.ScheduledAt, s.RecordedAt = at.Time, rec.Time
	return s, nil
}

// ScanInstantJob reads JobColumns, then the job's first attempt start (NULL:
// none).
func ScanInstantJob(r Row) (InstantJob, error) {
	var first Time
	j, err := scanJob(r, &first)
	if err != nil {
		return InstantJob{}, err
	}
	return InstantJob{Job: j, FirstStartedAt: firstStart(j.StartedAt, first.Time)}, nil
}

// firstStart is the earlier of a job's latest start and its first recorded
// one: a silent successful attempt has no attempt row.
func firstStart(latest, recorded time.Time) time.Time {
	if recorded.IsZero() || (!latest.IsZero() && latest.Before(recorded)) {
		return latest
	}
	return recorded
}

// ScanAttempt reads job_id, attempt, worker, started_at, finished_at,
// outcome, error, output, and drops two ordering columns.
func ScanAttempt(r Row) (Attempt, error) {
	var a Attempt
	var started, finished Time
	var synthetic, id int64
	err := r.Scan(&a.JobID, &a.Number, &a.Worker, &started, &finished, &a.Outcome, &a.Error, &a.Output, &synthetic, &id)
	a.StartedAt, a.FinishedAt = started.Time, finished.Time
	return a, err
}

// ScanCursor reads schedule, at, paused, paused_at.
func ScanCursor(r Row) (Cursor, error) {
	var c Cursor
	var at, pausedAt Time
	err := r.Scan(&c.Schedule, &at, &c.Paused, &pausedAt)
	c.At, c.PausedAt = at.Time, pausedAt.Time
	return c, err
}

// ScanAlarmMark reads schedule, late_at, missed_at, misfire_at, dead_at.
func ScanAlarmMark(r Row) (AlarmMark, error) {
	var m AlarmMark
	var late, missed, misfire, dead Time
	err := r.Scan(&m.Schedule, &late, &missed, &misfire, &dead)
	m.Late, m.Missed, m.Misfire, m.Dead = late.Time, missed.Time, misfire.Time, dead.Time
	return m, err
}

// ScanPoolRow reads owner, pid, host, version, started_at, seen_at,
// config_sha256, config_at (NULL: none), workers.
func ScanPoolRow(r Row) (PoolRow, error) {
	var p PoolRow
	var started, seen, configAt Time
	err := r.Scan(&p.Owner, &p.PID, &p.Host, &p.Version, &started, &seen, &p.Config, &configAt, &p.Workers)
	p.StartedAt, p.LastSeen = started.Time, seen.Time
	if p.Config != "" {
		p.ConfigAt = configAt.Time
	}
	return p, err
}

// ScanCancelRequest reads id, attempt, cancelled_by.
func ScanCancelRequest(r Row) (CancelRequest, error) {
	var c CancelRequest
	var by sql.NullString
	err := r.Scan(&c.ID, &c.Attempt, &by)
	c.By = by.String
	return c, err
}
