package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// pingSQL reads a little of the two tables the daemon lives on, whatever
// their size.
const pingSQL = `SELECT (SELECT max(id) FROM jobs), (SELECT count(*) FROM cursors)`

// Ping reads the database, cheaply: it fails when the file cannot be read.
// Stats answers the same question but counts every job, which takes a
// second or more once a million done jobs are kept.
func (q *Queue) Ping(ctx context.Context) error {
	var maxID sql.NullInt64
	var cursors int
	if err := q.r.QueryRowContext(ctx, pingSQL).Scan(&maxID, &cursors); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

const statsSQL = `SELECT state, type, count(*) FROM jobs GROUP BY state, type`

const oldestReadySQL = `SELECT min(run_at) FROM jobs WHERE state = 'pending' AND run_at <= ?`

// Stats counts jobs by state and type and measures the oldest ready job.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	now := q.clock.Now()
	s := Stats{Counts: map[State]map[string]int{}, Total: map[State]int{}, At: now}
	rows, err := q.r.QueryContext(ctx, statsSQL)
	if err != nil {
		return s, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st State
		var typ string
		var n int
		if err := rows.Scan(&st, &typ, &n); err != nil {
			return s, fmt.Errorf("stats: %w", err)
		}
		if s.Counts[st] == nil {
			s.Counts[st] = map[string]int{}
		}
		s.Counts[st][typ] = n
		s.Total[st] += n
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("stats: %w", err)
	}
	s.Dead = s.Total[StateDead]
	var oldest sql.NullInt64
	if err := q.r.QueryRowContext(ctx, oldestReadySQL, ms(now)).Scan(&oldest); err != nil {
		return s, fmt.Errorf("stats: %w", err)
	}
	if oldest.Valid {
		s.OldestReady = now.Sub(time.UnixMilli(oldest.Int64))
	}
	return s, nil
}

const deadSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE state = 'dead' ORDER BY id LIMIT ?`

// Dead returns up to limit dead jobs, oldest first.
func (q *Queue) Dead(ctx context.Context, limit int) ([]*Job, error) {
	return q.jobs(ctx, deadSQL, limit)
}

func (q *Queue) jobs(ctx context.Context, query string, args ...any) ([]*Job, error) {
	rows, err := q.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// retrySQL revives dead jobs with as many fresh attempts as they had at
// first (max_attempts - attempt_base), however often they were revived
// before; the count of attempts spent is kept, so the history stays in
// order and a late result of an old attempt stays fenced off.
const retrySQL = `UPDATE jobs SET state = 'pending', run_at = ?1, finished_at = NULL,
	max_attempts = attempt + max_attempts - attempt_base, attempt_base = attempt
WHERE state = 'dead' AND (?2 = 0 OR id = ?2)`

// Retry makes the dead job id pending again, to run at once with a fresh set
// of attempts. It returns ErrNotFound if no dead job has that id.
func (q *Queue) Retry(ctx context.Context, id int64) error {
	if id <= 0 {
		return fmt.Errorf("retry job %d: %w", id, ErrNotFound)
	}
	n, err := q.retry(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("retry job %d: no dead job with that id: %w", id, ErrNotFound)
	}
	return nil
}

// RetryAllDead makes every dead job pending again and returns how many.
func (q *Queue) RetryAllDead(ctx context.Context) (int64, error) {
	return q.retry(ctx, 0)
}

func (q *Queue) retry(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := q.inTx(ctx, true, func(tx txn) error {
		res, err := tx.ExecContext(ctx, retrySQL, ms(q.clock.Now()), id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retry dead jobs: %w", err)
	}
	if n > 0 {
		q.notify()
	}
	return n, nil
}

const cancelSQL = `UPDATE jobs SET state = 'cancelled', finished_at = ? WHERE id = ? AND state = 'pending'`

// Cancel stops a pending job from ever running. A running job cannot be
// cancelled; ErrNotFound means no pending job has that id.
func (q *Queue) Cancel(ctx context.Context, id int64) error {
	var n int64
	err := q.inTx(ctx, true, func(tx txn) error {
		res, err := tx.ExecContext(ctx, cancelSQL, ms(q.clock.Now()), id)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("cancel job %d: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("cancel job %d: no pending job with that id: %w", id, ErrNotFound)
	}
	return nil
}

const jobByIDSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`
const jobByKeySQL = `SELECT ` + jobColumns + ` FROM jobs WHERE key = ?`

// Job looks a job up by id or, when ref is not a number or no job has that
// id, by dedup key.
func (q *Queue) Job(ctx context.Context, ref string) (*Job, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		j, err := scanJob(q.r.QueryRowContext(ctx, jobByIDSQL, id))
		if err == nil {
			return j, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("look up job %s: %w", ref, err)
		}
	}
	j, err := scanJob(q.r.QueryRowContext(ctx, jobByKeySQL, ref))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("look up job %s: %w", ref, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("look up job %s: %w", ref, err)
	}
	return j, nil
}

// attemptsSQL lists a job's attempt rows and, for a done job whose
// successful attempt has no row of its own (it printed nothing, see finish),
// that attempt as the job row records it.
const attemptsSQL = `SELECT job_id, attempt, worker, started_at, finished_at, outcome, error, output, 0 AS synthetic, id
FROM attempts WHERE job_id = ?1
UNION ALL
SELECT id, attempt, coalesce(owner, ''), coalesce(started_at, finished_at), finished_at, 'done', '', '', 1, 0
FROM jobs WHERE id = ?1 AND state = 'done' AND NOT EXISTS (
	SELECT 1 FROM attempts a WHERE a.job_id = jobs.id AND a.attempt = jobs.attempt AND a.outcome = 'done')
ORDER BY attempt, synthetic, id`

// Attempts returns the attempts of a job by number, and those of one number
// (an attempt given back at shutdown is run again under its number) in the
// order they were recorded. A stale result, recorded after a later attempt,
// comes with its own number.
func (q *Queue) Attempts(ctx context.Context, jobID int64) ([]Attempt, error) {
	rows, err := q.r.QueryContext(ctx, attemptsSQL, jobID)
	if err != nil {
		return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
	}
	defer rows.Close()
	var out []Attempt
	for rows.Next() {
		var a Attempt
		var st, fin, synthetic, id int64
		if err := rows.Scan(&a.JobID, &a.Number, &a.Worker, &st, &fin, &a.Outcome, &a.Error, &a.Output, &synthetic, &id); err != nil {
			return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
		}
		a.StartedAt, a.FinishedAt = time.UnixMilli(st).UTC(), time.UnixMilli(fin).UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
	}
	return out, nil
}

// lastRunsSQL takes, per schedule, its newest job by instant (then id),
// walking jobs_schedule_at once per schedule.
const lastRunsSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE id IN (
	SELECT (SELECT j.id FROM jobs j WHERE j.schedule = s.schedule ORDER BY j.scheduled_at DESC, j.id DESC LIMIT 1)
	FROM (SELECT DISTINCT schedule FROM jobs WHERE schedule IS NOT NULL) s)`

// LastRuns returns, per schedule name, its newest job: the one of its
// latest instant, or its newest manual run when it has no instant's job.
func (q *Queue) LastRuns(ctx context.Context) (map[string]*Job, error) {
	js, err := q.jobs(ctx, lastRunsSQL)
	if err != nil {
		return nil, fmt.Errorf("last runs: %w", err)
	}
	out := make(map[string]*Job, len(js))
	for _, j := range js {
		out[j.Schedule] = j
	}
	return out, nil
}

const lastManualRunsSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE id IN (
	SELECT (SELECT j.id FROM jobs j WHERE j.schedule = s.schedule AND j.scheduled_at IS NULL ORDER BY j.id DESC LIMIT 1)
	FROM (SELECT DISTINCT schedule FROM jobs WHERE schedule IS NOT NULL) s)`

// LastManualRuns returns, per schedule name, its newest job that stands for
// no instant (a manual run), for the schedules that have one.
func (q *Queue) LastManualRuns(ctx context.Context) (map[string]*Job, error) {
	js, err := q.jobs(ctx, lastManualRunsSQL)
	if err != nil {
		return nil, fmt.Errorf("last manual runs: %w", err)
	}
	out := make(map[string]*Job, len(js))
	for _, j := range js {
		out[j.Schedule] = j
	}
	return out, nil
}

const scheduleJobsSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE schedule = ? ORDER BY scheduled_at DESC, id DESC LIMIT ?`

// ScheduleJobs returns up to limit jobs of a schedule, newest instant first.
func (q *Queue) ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*Job, error) {
	return q.jobs(ctx, scheduleJobsSQL, schedule, limit)
}
