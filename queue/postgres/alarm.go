package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

const alarmColumns = `alarms.id, alarms.key, alarms.schedule, alarms.item, alarms.scheduled_at, alarms.kind, alarms.job_id,
alarms.error, alarms.detail, alarms.open, alarms.raised_at`

func scanAlarm(row pgx.Row, extra ...any) (store.Alarm, error) {
	var a store.Alarm
	var at *time.Time
	var detail string
	dest := append([]any{&a.ID, &a.Key, &a.Schedule, &a.Item, &at, &a.Kind, &a.JobID, &a.Error, &detail, &a.Open, &a.RaisedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return a, err
	}
	a.ScheduledAt = fromTS(at)
	a.Detail = []byte(detail)
	a.RaisedAt = a.RaisedAt.UTC()
	return a, nil
}

const insertAlarmSQL = `INSERT INTO alarms (key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (key) DO NOTHING RETURNING id`

const closeAlarmsSQL = `UPDATE alarms SET open = false WHERE open AND id = ANY($1)`

// moveMarkSQL moves a schedule's marks forward only.
const moveMarkSQL = `INSERT INTO alarm_marks (schedule, late_at, missed_at, misfire_at, dead_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (schedule) DO UPDATE SET late_at = greatest(alarm_marks.late_at, excluded.late_at),
	missed_at = greatest(alarm_marks.missed_at, excluded.missed_at),
	misfire_at = greatest(alarm_marks.misfire_at, excluded.misfire_at),
	dead_at = greatest(alarm_marks.dead_at, excluded.dead_at), updated_at = excluded.updated_at`

// RaiseAlarms commits b in one transaction (see store.Engine).
func (s *Store) RaiseAlarms(ctx context.Context, b store.AlarmBatch) ([]store.Alarm, error) {
	now := ts(s.now())
	alarms, err := store.PrepareAlarms(b.Alarms, now)
	if err != nil {
		return nil, err
	}
	var raised []store.Alarm
	notified := false
	err = s.inTx(ctx, func(tx pgx.Tx, d store.CountDeltas) error {
		raised, notified = raised[:0], false
		for _, a := range alarms {
			var id int64
			err := tx.QueryRow(ctx, insertAlarmSQL, a.Key, a.Schedule, a.Item, nullTS(a.ScheduledAt), string(a.Kind),
				a.JobID, capText(a.Error), string(a.Detail), store.OpensAlarm(a.Kind), now).Scan(&id)
			switch {
			case errNoRows(err):
				// Raised before, by this node or another.
			case err != nil:
				return fmt.Errorf("insert alarm %s: %w", a.Key, err)
			default:
				raised = append(raised, store.Alarm{ID: id, Key: a.Key, Schedule: a.Schedule, Item: a.Item,
					ScheduledAt: a.ScheduledAt, Kind: a.Kind, JobID: a.JobID, Error: capText(a.Error), Detail: a.Detail,
					Open: store.OpensAlarm(a.Kind), RaisedAt: now})
				res, err := insertJobs(ctx, tx, d, a.Notify, now)
				if err != nil {
					return fmt.Errorf("notify alarm %s: %w", a.Key, err)
				}
				notified = notified || inserted(res)
			}
			if len(a.Resolves) > 0 {
				if _, err := tx.Exec(ctx, closeAlarmsSQL, a.Resolves); err != nil {
					return fmt.Errorf("close alarms: %w", err)
				}
			}
		}
		for _, m := range b.Marks {
			if _, err := tx.Exec(ctx, moveMarkSQL, m.Schedule, ts(m.Late), ts(m.Missed), ts(m.Misfire), ts(m.Dead), now); err != nil {
				return fmt.Errorf("move alarm marks of %s: %w", m.Schedule, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("raise alarms: %w", err)
	}
	if notified {
		s.wake()
	}
	return raised, nil
}

// AlarmMarks returns every schedule's alarm marks, by schedule name.
func (s *Store) AlarmMarks(ctx context.Context) (map[string]store.AlarmMark, error) {
	rows, err := s.pool.Query(ctx, `SELECT schedule, late_at, missed_at, misfire_at, dead_at FROM alarm_marks`)
	if err != nil {
		return nil, fmt.Errorf("read alarm marks: %w", err)
	}
	defer rows.Close()
	out := map[string]store.AlarmMark{}
	for rows.Next() {
		var m store.AlarmMark
		if err := rows.Scan(&m.Schedule, &m.Late, &m.Missed, &m.Misfire, &m.Dead); err != nil {
			return nil, fmt.Errorf("read alarm marks: %w", err)
		}
		m.Late, m.Missed, m.Misfire, m.Dead = m.Late.UTC(), m.Missed.UTC(), m.Misfire.UTC(), m.Dead.UTC()
		out[m.Schedule] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read alarm marks: %w", err)
	}
	return out, nil
}

func clampAlarmRows(limit int) int {
	if limit <= 0 || limit > store.MaxAlarmRows {
		return store.MaxAlarmRows
	}
	return limit
}

// instantJobsSQL walks jobs_schedule_at over the range; the first start
// comes from the attempts of each job found (attempts_job).
const instantJobsSQL = `SELECT ` + jobColumnsOf + `,
	(SELECT min(a.started_at) FROM attempts a WHERE a.job_id = jobs.id)
FROM jobs WHERE schedule = $1 AND scheduled_at > $2 AND scheduled_at <= $3
ORDER BY scheduled_at, item, id LIMIT $4`

// InstantJobs returns up to limit jobs of schedule whose instant is in
// (after, through], oldest instant first, then by item.
func (s *Store) InstantJobs(ctx context.Context, schedule string, after, through time.Time, limit int) ([]store.InstantJob, error) {
	rows, err := s.pool.Query(ctx, s.jobsQuery(instantJobsSQL), schedule, ts(after), ts(through), clampAlarmRows(limit))
	if err != nil {
		return nil, fmt.Errorf("read jobs of %s: %w", schedule, err)
	}
	defer rows.Close()
	var out []store.InstantJob
	for rows.Next() {
		var first *time.Time
		j, err := scanJob(extraRow{rows, []any{&first}})
		if err != nil {
			return nil, fmt.Errorf("read jobs of %s: %w", schedule, err)
		}
		out = append(out, store.InstantJob{Job: j, FirstStartedAt: firstStart(j.StartedAt, fromTS(first))})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read jobs of %s: %w", schedule, err)
	}
	return out, nil
}

// firstStart is the earlier of a job's latest start and its first recorded
// attempt's start: a successful attempt that printed nothing has no
// attempt row.
func firstStart(latest, recorded time.Time) time.Time {
	if recorded.IsZero() || (!latest.IsZero() && latest.Before(recorded)) {
		return latest
	}
	return recorded
}

// extraRow scans a row of jobColumns followed by more columns.
type extraRow struct {
	row   pgx.Row
	extra []any
}

func (e extraRow) Scan(dest ...any) error { return e.row.Scan(append(dest, e.extra...)...) }

// DeadJobs returns up to limit dead jobs of any schedule that finished
// after after, oldest first; it walks jobs_dead_finished, which holds dead
// jobs only.
func (s *Store) DeadJobs(ctx context.Context, after time.Time, limit int) ([]*store.Job, error) {
	return s.jobs(ctx, deadJobsSQL, ts(after), clampAlarmRows(limit))
}

// SkipsBetween returns up to limit skips of schedule for reason whose
// instant is in (after, through], oldest first.
func (s *Store) SkipsBetween(ctx context.Context, schedule string, reason store.SkipReason, after, through time.Time, limit int) ([]store.Skip, error) {
	out, err := s.skips(ctx, skipsBetweenSQL,
		schedule, ts(after), ts(through), string(reason), clampAlarmRows(limit))
	if err != nil {
		return nil, fmt.Errorf("read skips of %s: %w", schedule, err)
	}
	return out, nil
}

// OpenAlarms returns up to limit open alarms, oldest first, with the state
// of their jobs.
func (s *Store) OpenAlarms(ctx context.Context, limit int) ([]store.OpenAlarm, error) {
	rows, err := s.pool.Query(ctx, openAlarmsSQL, clampAlarmRows(limit))
	if err != nil {
		return nil, fmt.Errorf("read open alarms: %w", err)
	}
	defer rows.Close()
	var out []store.OpenAlarm
	for rows.Next() {
		var state *string
		var finished *time.Time
		var notifying bool
		a, err := scanAlarm(rows, &state, &finished, &notifying)
		if err != nil {
			return nil, fmt.Errorf("read open alarms: %w", err)
		}
		o := store.OpenAlarm{Alarm: a, JobFinishedAt: fromTS(finished), Notifying: notifying}
		if state != nil {
			o.JobState = store.State(*state)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read open alarms: %w", err)
	}
	return out, nil
}

// Alarms returns up to limit (1 to MaxList) alarms, newest first: of
// schedule, or of every schedule when it is empty.
func (s *Store) Alarms(ctx context.Context, schedule string, limit int) ([]store.Alarm, error) {
	if err := store.CheckLimit("list alarms", limit); err != nil {
		return nil, err
	}
	var rows pgx.Rows
	var err error
	if schedule == "" {
		rows, err = s.pool.Query(ctx, `SELECT `+alarmColumns+` FROM alarms ORDER BY id DESC LIMIT $1`, limit)
	} else {
		rows, err = s.pool.Query(ctx, alarmsOfSQL, schedule, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("list alarms: %w", err)
	}
	defer rows.Close()
	var out []store.Alarm
	for rows.Next() {
		a, err := scanAlarm(rows)
		if err != nil {
			return nil, fmt.Errorf("list alarms: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list alarms: %w", err)
	}
	return out, nil
}

// LastSuccess returns when the newest instant of schedule that succeeded
// finished; zero when none is kept. It walks jobs_schedule_at from the
// newest instant back to the first done job.
func (s *Store) LastSuccess(ctx context.Context, schedule string) (time.Time, error) {
	var at *time.Time
	err := s.pool.QueryRow(ctx, lastSuccessSQL, schedule).Scan(&at)
	switch {
	case errNoRows(err):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, fmt.Errorf("last success of %s: %w", schedule, err)
	}
	return fromTS(at), nil
}

// The reads of the alarms' evaluation and of the operators, each a bounded
// range of an index (see TestAlarmQueryPlans).
const (
	deadJobsSQL = `SELECT ` + jobColumns + ` FROM jobs
WHERE state = 'dead' AND schedule IS NOT NULL AND finished_at > $1 ORDER BY finished_at, id LIMIT $2`
	skipsBetweenSQL = `SELECT ` + skipColumns + ` FROM skips
WHERE schedule = $1 AND scheduled_at > $2 AND scheduled_at <= $3 AND reason = $4 ORDER BY scheduled_at, item LIMIT $5`
	// openAlarmsSQL reads the open alarms with their jobs' states, and
	// whether a notification job of each is still to end: its key is
	// NotifyKeyPrefix, the alarm's key, "|" and a task name (which has no
	// "|"), found by a range on the unique key index (keys collate as "C").
	openAlarmsSQL = `SELECT ` + alarmColumns + `, j.state, j.finished_at,
	EXISTS (SELECT 1 FROM jobs n WHERE n.key >= '` + store.NotifyKeyPrefix + `' || alarms.key || '|' AND n.key < '` + store.NotifyKeyPrefix + `' || alarms.key || '}'
		AND strpos(substr(n.key, length('` + store.NotifyKeyPrefix + `' || alarms.key || '|') + 1), '|') = 0
		AND n.state IN ('pending', 'running'))
FROM alarms LEFT JOIN jobs j ON j.id = alarms.job_id WHERE alarms.open ORDER BY alarms.id LIMIT $1`
	alarmsOfSQL    = `SELECT ` + alarmColumns + ` FROM alarms WHERE schedule = $1 ORDER BY id DESC LIMIT $2`
	lastSuccessSQL = `SELECT finished_at FROM jobs
WHERE schedule = $1 AND scheduled_at IS NOT NULL AND state = 'done' ORDER BY scheduled_at DESC NULLS LAST, id DESC LIMIT 1`
)
