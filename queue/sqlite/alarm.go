package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

const alarmColumns = `id, key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at`

func scanAlarm(s scanner, extra ...any) (store.Alarm, error) {
	var a store.Alarm
	var at sql.NullInt64
	var detail string
	var raised int64
	dest := append([]any{&a.ID, &a.Key, &a.Schedule, &a.Item, &at, &a.Kind, &a.JobID, &a.Error, &detail, &a.Open, &raised}, extra...)
	if err := s.Scan(dest...); err != nil {
		return a, err
	}
	a.ScheduledAt = fromMS(at)
	a.Detail = json.RawMessage(detail)
	a.RaisedAt = time.UnixMilli(raised).UTC()
	return a, nil
}

const insertAlarmSQL = `INSERT INTO alarms (key, schedule, item, scheduled_at, kind, job_id, error, detail, open, raised_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING id`

const closeAlarmsSQL = `UPDATE alarms SET open = 0 WHERE open = 1 AND id IN (SELECT value FROM json_each(?))`

// moveMarkSQL moves a schedule's marks forward only.
const moveMarkSQL = `INSERT INTO alarm_marks (schedule, late_at, missed_at, misfire_at, dead_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (schedule) DO UPDATE SET late_at = max(late_at, excluded.late_at),
	missed_at = max(missed_at, excluded.missed_at), misfire_at = max(misfire_at, excluded.misfire_at),
	dead_at = max(dead_at, excluded.dead_at), updated_at = excluded.updated_at`

// RaiseAlarms commits b in one transaction (see store.Engine). The commit is
// not fsynced: a power loss loses the alarms with the marks that passed
// them, and the next evaluation raises them again.
func (s *Store) RaiseAlarms(ctx context.Context, b store.AlarmBatch) ([]store.Alarm, error) {
	now := s.clock.Now()
	alarms, err := store.PrepareAlarms(b.Alarms, now)
	if err != nil {
		return nil, err
	}
	var raised []store.Alarm
	notified := false
	err = s.inTx(ctx, false, func(tx txn) error {
		raised, notified = raised[:0], false
		for _, a := range alarms {
			var id int64
			err := tx.queryRow(ctx, insertAlarmSQL, a.Key, a.Schedule, a.Item, nullMS(a.ScheduledAt), string(a.Kind),
				a.JobID, capText(a.Error), string(a.Detail), store.OpensAlarm(a.Kind), ms(now)).Scan(&id)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				// Raised before, by this process or another.
			case err != nil:
				return fmt.Errorf("insert alarm %s: %w", a.Key, err)
			default:
				raised = append(raised, store.Alarm{ID: id, Key: a.Key, Schedule: a.Schedule, Item: a.Item,
					ScheduledAt: a.ScheduledAt, Kind: a.Kind, JobID: a.JobID, Error: capText(a.Error), Detail: a.Detail,
					Open: store.OpensAlarm(a.Kind), RaisedAt: time.UnixMilli(ms(now)).UTC()})
				res, err := insertJobs(ctx, tx, a.Notify, now)
				if err != nil {
					return fmt.Errorf("notify alarm %s: %w", a.Key, err)
				}
				for _, r := range res {
					notified = notified || r.Inserted
				}
			}
			if len(a.Resolves) > 0 {
				ids, _ := json.Marshal(a.Resolves)
				if _, err := tx.exec(ctx, closeAlarmsSQL, string(ids)); err != nil {
					return fmt.Errorf("close alarms: %w", err)
				}
			}
		}
		for _, m := range b.Marks {
			if _, err := tx.exec(ctx, moveMarkSQL, m.Schedule, ms(m.Late), ms(m.Missed), ms(m.Misfire), ms(m.Dead), ms(now)); err != nil {
				return fmt.Errorf("move alarm marks of %s: %w", m.Schedule, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("raise alarms: %w", err)
	}
	if notified {
		s.notify()
	}
	return raised, nil
}

const alarmMarksSQL = `SELECT schedule, late_at, missed_at, misfire_at, dead_at FROM alarm_marks`

// AlarmMarks returns every schedule's alarm marks, by schedule name.
func (s *Store) AlarmMarks(ctx context.Context) (map[string]store.AlarmMark, error) {
	rows, err := s.r.QueryContext(ctx, alarmMarksSQL)
	if err != nil {
		return nil, fmt.Errorf("read alarm marks: %w", err)
	}
	defer rows.Close()
	out := map[string]store.AlarmMark{}
	for rows.Next() {
		var m store.AlarmMark
		var late, missed, misfire, dead int64
		if err := rows.Scan(&m.Schedule, &late, &missed, &misfire, &dead); err != nil {
			return nil, fmt.Errorf("read alarm marks: %w", err)
		}
		m.Late, m.Missed = time.UnixMilli(late).UTC(), time.UnixMilli(missed).UTC()
		m.Misfire, m.Dead = time.UnixMilli(misfire).UTC(), time.UnixMilli(dead).UTC()
		out[m.Schedule] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read alarm marks: %w", err)
	}
	return out, nil
}

// instantJobsSQL walks jobs_schedule_at over the range; the first start
// comes from the attempts of each job found (attempts_job).
const instantJobsSQL = `SELECT ` + jobColumns + `,
	(SELECT min(a.started_at) FROM attempts a WHERE a.job_id = jobs.id)
FROM jobs WHERE schedule = ? AND scheduled_at > ? AND scheduled_at <= ?
ORDER BY scheduled_at, item, id LIMIT ?`

// InstantJobs returns up to limit jobs of schedule whose instant is in
// (after, through], oldest instant first, then by item.
func (s *Store) InstantJobs(ctx context.Context, schedule string, after, through time.Time, limit int) ([]store.InstantJob, error) {
	rows, err := s.r.QueryContext(ctx, s.jobsQuery(instantJobsSQL), schedule, ms(after), ms(through), clampAlarmRows(limit))
	if err != nil {
		return nil, fmt.Errorf("read jobs of %s: %w", schedule, err)
	}
	defer rows.Close()
	var out []store.InstantJob
	for rows.Next() {
		var first sql.NullInt64
		j, err := scanJob(extraScanner{rows, []any{&first}})
		if err != nil {
			return nil, fmt.Errorf("read jobs of %s: %w", schedule, err)
		}
		out = append(out, store.InstantJob{Job: j, FirstStartedAt: firstStart(j.StartedAt, fromMS(first))})
	}
	return out, rows.Err()
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

// extraScanner scans a row of jobColumns followed by more columns.
type extraScanner struct {
	s     scanner
	extra []any
}

func (e extraScanner) Scan(dest ...any) error { return e.s.Scan(append(dest, e.extra...)...) }

func clampAlarmRows(limit int) int {
	if limit <= 0 || limit > store.MaxAlarmRows {
		return store.MaxAlarmRows
	}
	return limit
}

// deadJobsSQL walks jobs_dead_finished, which holds dead jobs only.
const deadJobsSQL = `SELECT ` + jobColumns + ` FROM jobs
WHERE state = 'dead' AND schedule IS NOT NULL AND finished_at > ? ORDER BY finished_at, id LIMIT ?`

// DeadJobs returns up to limit dead jobs of any schedule that finished
// after after, oldest first.
func (s *Store) DeadJobs(ctx context.Context, after time.Time, limit int) ([]*store.Job, error) {
	return s.jobs(ctx, deadJobsSQL, ms(after), clampAlarmRows(limit))
}

const skipsBetweenSQL = `SELECT schedule, item, scheduled_at, reason, recorded_at FROM skips
WHERE schedule = ? AND scheduled_at > ? AND scheduled_at <= ? AND reason = ? ORDER BY scheduled_at, item LIMIT ?`

// SkipsBetween returns up to limit skips of schedule for reason whose
// instant is in (after, through], oldest first.
func (s *Store) SkipsBetween(ctx context.Context, schedule string, reason store.SkipReason, after, through time.Time, limit int) ([]store.Skip, error) {
	rows, err := s.r.QueryContext(ctx, skipsBetweenSQL, schedule, ms(after), ms(through), string(reason), clampAlarmRows(limit))
	if err != nil {
		return nil, fmt.Errorf("read skips of %s: %w", schedule, err)
	}
	defer rows.Close()
	var out []store.Skip
	for rows.Next() {
		sk, err := scanSkip(rows)
		if err != nil {
			return nil, fmt.Errorf("read skips of %s: %w", schedule, err)
		}
		out = append(out, sk)
	}
	return out, rows.Err()
}

// openAlarmsSQL reads the open alarms with their jobs' states, and whether
// a notification job of each is still to end: its key is NotifyKeyPrefix,
// the alarm's key, "|" and a task name (which has no "|"), found by a
// range on the unique key index.
const openAlarmsSQL = `SELECT a.id, a.key, a.schedule, a.item, a.scheduled_at, a.kind, a.job_id, a.error, a.detail, a.open, a.raised_at,
	j.state, j.finished_at,
	EXISTS (SELECT 1 FROM jobs n WHERE n.key >= '` + store.NotifyKeyPrefix + `' || a.key || '|' AND n.key < '` + store.NotifyKeyPrefix + `' || a.key || '}'
		AND instr(substr(n.key, length('` + store.NotifyKeyPrefix + `' || a.key || '|') + 1), '|') = 0
		AND n.state IN ('pending', 'running'))
FROM alarms a LEFT JOIN jobs j ON j.id = a.job_id WHERE a.open = 1 ORDER BY a.id LIMIT ?`

// OpenAlarms returns up to limit open alarms, oldest first, with the state
// of their jobs.
func (s *Store) OpenAlarms(ctx context.Context, limit int) ([]store.OpenAlarm, error) {
	rows, err := s.r.QueryContext(ctx, openAlarmsSQL, clampAlarmRows(limit))
	if err != nil {
		return nil, fmt.Errorf("read open alarms: %w", err)
	}
	defer rows.Close()
	var out []store.OpenAlarm
	for rows.Next() {
		var state sql.NullString
		var finished sql.NullInt64
		var notifying bool
		a, err := scanAlarm(rows, &state, &finished, &notifying)
		if err != nil {
			return nil, fmt.Errorf("read open alarms: %w", err)
		}
		out = append(out, store.OpenAlarm{Alarm: a, JobState: store.State(state.String), JobFinishedAt: fromMS(finished),
			Notifying: notifying})
	}
	return out, rows.Err()
}

const (
	alarmsAllSQL = `SELECT ` + alarmColumns + ` FROM alarms ORDER BY id DESC LIMIT ?`
	alarmsOfSQL  = `SELECT ` + alarmColumns + ` FROM alarms WHERE schedule = ? ORDER BY id DESC LIMIT ?`
)

// Alarms returns up to limit (1 to MaxList) alarms, newest first: of
// schedule, or of every schedule when it is empty.
func (s *Store) Alarms(ctx context.Context, schedule string, limit int) ([]store.Alarm, error) {
	if err := store.CheckLimit("list alarms", limit); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	var err error
	if schedule == "" {
		rows, err = s.r.QueryContext(ctx, alarmsAllSQL, limit)
	} else {
		rows, err = s.r.QueryContext(ctx, alarmsOfSQL, schedule, limit)
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
	return out, rows.Err()
}

// lastSuccessSQL walks jobs_schedule_at from the newest instant back to the
// first done job.
const lastSuccessSQL = `SELECT finished_at FROM jobs
WHERE schedule = ? AND scheduled_at IS NOT NULL AND state = 'done' ORDER BY scheduled_at DESC LIMIT 1`

// LastSuccess returns when the newest instant of schedule that succeeded
// finished; zero when none is kept.
func (s *Store) LastSuccess(ctx context.Context, schedule string) (time.Time, error) {
	var at sql.NullInt64
	err := s.r.QueryRowContext(ctx, lastSuccessSQL, schedule).Scan(&at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, nil
	case err != nil:
		return time.Time{}, fmt.Errorf("last success of %s: %w", schedule, err)
	}
	return fromMS(at), nil
}
