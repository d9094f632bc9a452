package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// pingSQL reads a little of the two tables the daemon lives on, whatever
// their size.
const pingSQL = `SELECT (SELECT max(id) FROM jobs), (SELECT count(*) FROM cursors)`

// Ping reads the database, cheaply: it fails when the file cannot be read.
// Stats answers the same question but counts every job, which takes a
// second or more once a million done jobs are kept.
func (s *Store) Ping(ctx context.Context) error {
	var maxID sql.NullInt64
	var cursors int
	if err := s.r.QueryRowContext(ctx, pingSQL).Scan(&maxID, &cursors); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// statsSQL counts every job: for a file written by a program that kept no
// job_counts, opened read-only.
const statsSQL = `SELECT state, type, count(*) FROM jobs GROUP BY state, type`

// countsKeptSQL tells how the file keeps its job counts: 2 with the count
// mark (job_counts_now), 1 with job_counts alone (a file older than the
// mark, opened read-only), 0 without (older still).
const countsKeptSQL = `SELECT count(*) FROM sqlite_schema
WHERE type = 'table' AND name = 'job_counts' OR type = 'view' AND name = 'job_counts_now'`

// readySinceSQL walks the ready jobs once, through the claim index.
const readySinceSQL = `SELECT type, min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ? GROUP BY type`

// Stats counts jobs by state and type, from job_counts, and measures the
// oldest ready job of each type, walking the ready jobs once.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	now := s.clock.Now()
	out := store.Stats{Counts: map[store.State]map[string]int{}, Total: map[store.State]int{}, At: now}
	var kept int
	if err := s.r.QueryRowContext(ctx, countsKeptSQL).Scan(&kept); err != nil {
		return out, fmt.Errorf("stats: %w", err)
	}
	query := [...]string{statsSQL, countsUnmarkedSQL, countsSQL}[kept]
	rows, err := s.r.QueryContext(ctx, query)
	if err != nil {
		return out, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var st store.State
		var typ string
		var n int
		if err := rows.Scan(&st, &typ, &n); err != nil {
			return out, fmt.Errorf("stats: %w", err)
		}
		if out.Counts[st] == nil {
			out.Counts[st] = map[string]int{}
		}
		out.Counts[st][typ] = n
		out.Total[st] += n
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("stats: %w", err)
	}
	out.Dead = out.Total[store.StateDead]
	if out.ReadySince, err = s.readySince(ctx, now); err != nil {
		return out, fmt.Errorf("stats: %w", err)
	}
	for _, at := range out.ReadySince {
		out.OldestReady = max(out.OldestReady, now.Sub(at))
	}
	return out, nil
}

func (s *Store) readySince(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	rows, err := s.r.QueryContext(ctx, readySinceSQL, ms(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var typ string
		var at int64
		if err := rows.Scan(&typ, &at); err != nil {
			return nil, err
		}
		out[typ] = time.UnixMilli(at)
	}
	return out, rows.Err()
}

// finishesSQL seeks jobs_schedule_finished twice: the newest done job, and
// the newest dead one.
const finishesSQL = `SELECT
	(SELECT max(finished_at) FROM jobs WHERE schedule = ?1 AND state = 'done' AND finished_at IS NOT NULL),
	(SELECT max(finished_at) FROM jobs WHERE schedule = ?1 AND state = 'dead' AND finished_at IS NOT NULL)`

// Finishes returns, per schedule of schedules that has a job kept, when
// its jobs last finished.
func (s *Store) Finishes(ctx context.Context, schedules []string) (map[string]store.Finishes, error) {
	out := make(map[string]store.Finishes, len(schedules))
	for _, name := range schedules {
		var done, dead sql.NullInt64
		if err := s.r.QueryRowContext(ctx, finishesSQL, name).Scan(&done, &dead); err != nil {
			return nil, fmt.Errorf("finishes of schedule %s: %w", name, err)
		}
		if !done.Valid && !dead.Valid {
			continue
		}
		var f store.Finishes
		if done.Valid {
			f.LastSuccess = time.UnixMilli(done.Int64)
		}
		f.LastCompletion = time.UnixMilli(max(done.Int64, dead.Int64))
		out[name] = f
	}
	return out, nil
}

const deadSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE state = 'dead' ORDER BY id LIMIT ?`

// Dead returns up to limit dead jobs, oldest first.
func (s *Store) Dead(ctx context.Context, limit int) ([]*store.Job, error) {
	return s.jobs(ctx, deadSQL, limit)
}

func (s *Store) jobs(ctx context.Context, query string, args ...any) ([]*store.Job, error) {
	rows, err := s.r.QueryContext(ctx, s.jobsQuery(query), args...)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []*store.Job
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
// order and a late result of an old attempt stays fenced off. retried_at
// records the operator's retry, from which the job's give_up_after budget
// counts again.
const retrySQL = `UPDATE jobs SET state = 'pending', run_at = ?1, retried_at = ?1, finished_at = NULL,
	max_attempts = attempt + max_attempts - attempt_base, attempt_base = attempt
WHERE state = 'dead' AND (?2 = 0 OR id = ?2)
RETURNING type`

// Retry makes the dead job id pending again, to run at once with a fresh set
// of attempts. It returns ErrNotFound if no dead job has that id.
func (s *Store) Retry(ctx context.Context, id int64) error {
	if id <= 0 {
		return fmt.Errorf("retry job %d: %w", id, store.ErrNotFound)
	}
	n, err := s.retry(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("retry job %d: no dead job with that id: %w", id, store.ErrNotFound)
	}
	return nil
}

// RetryAllDead makes every dead job pending again and returns how many.
func (s *Store) RetryAllDead(ctx context.Context) (int64, error) {
	return s.retry(ctx, 0)
}

func (s *Store) retry(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := s.inTx(ctx, true, func(tx txn) error {
		rows, err := tx.query(ctx, retrySQL, ms(s.clock.Now()), id)
		n, err = tx.moveTypes(rows, err, store.StateDead, store.StatePending)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retry dead jobs: %w", err)
	}
	if n > 0 {
		s.notify()
	}
	return n, nil
}

const jobByIDSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE id = ?`
const jobByKeySQL = `SELECT ` + jobColumns + ` FROM jobs WHERE key = ?`

// Job returns the job with this id, or ErrNotFound.
func (s *Store) Job(ctx context.Context, id int64) (*store.Job, error) {
	j, err := scanJob(s.r.QueryRowContext(ctx, s.jobsQuery(jobByIDSQL), id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("look up job %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("look up job %d: %w", id, err)
	}
	return j, nil
}

// JobByKey returns the job with this dedup key, or ErrNotFound.
func (s *Store) JobByKey(ctx context.Context, key string) (*store.Job, error) {
	j, err := scanJob(s.r.QueryRowContext(ctx, s.jobsQuery(jobByKeySQL), key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("look up job %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("look up job %s: %w", key, err)
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
func (s *Store) Attempts(ctx context.Context, jobID int64) ([]store.Attempt, error) {
	rows, err := s.r.QueryContext(ctx, attemptsSQL, jobID)
	if err != nil {
		return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var a store.Attempt
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
func (s *Store) LastRuns(ctx context.Context) (map[string]*store.Job, error) {
	js, err := s.jobs(ctx, lastRunsSQL)
	if err != nil {
		return nil, fmt.Errorf("last runs: %w", err)
	}
	out := make(map[string]*store.Job, len(js))
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
func (s *Store) LastManualRuns(ctx context.Context) (map[string]*store.Job, error) {
	js, err := s.jobs(ctx, lastManualRunsSQL)
	if err != nil {
		return nil, fmt.Errorf("last manual runs: %w", err)
	}
	out := make(map[string]*store.Job, len(js))
	for _, j := range js {
		out[j.Schedule] = j
	}
	return out, nil
}

const scheduleJobsSQL = `SELECT ` + jobColumns + ` FROM jobs WHERE schedule = ? ORDER BY scheduled_at DESC, id DESC LIMIT ?`

// ScheduleJobs returns up to limit jobs of a schedule, newest instant first.
func (s *Store) ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*store.Job, error) {
	return s.jobs(ctx, scheduleJobsSQL, schedule, limit)
}
