package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

func (s *Store) jobs(ctx context.Context, query string, args ...any) ([]*store.Job, error) {
	js, err := collectJobs(s.pool.Query(ctx, s.jobsQuery(query), args...))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return js, nil
}

// Job returns the job with this id, or ErrNotFound.
func (s *Store) Job(ctx context.Context, id int64) (*store.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, s.jobsQuery(`SELECT `+jobColumns+` FROM jobs WHERE id = $1`), id))
	if errNoRows(err) {
		return nil, fmt.Errorf("job %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", id, err)
	}
	return j, nil
}

// JobByKey returns the job with this dedup key, or ErrNotFound.
func (s *Store) JobByKey(ctx context.Context, key string) (*store.Job, error) {
	j, err := scanJob(s.pool.QueryRow(ctx, s.jobsQuery(`SELECT `+jobColumns+` FROM jobs WHERE key = $1`), key))
	if errNoRows(err) {
		return nil, fmt.Errorf("job %q: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("job %q: %w", key, err)
	}
	return j, nil
}

func validState(st store.State) bool {
	switch st {
	case store.StatePending, store.StateRunning, store.StateDone, store.StateDead, store.StateCancelled:
		return true
	}
	return false
}

// List returns the jobs f selects, newest (highest id) first. A filter by
// type or schedule keeps the matches among the newest ListScanBound jobs
// of the state's walk, as the SQLite engine does.
func (s *Store) List(ctx context.Context, f store.Filter) ([]*store.Job, error) {
	if f.Limit == 0 {
		f.Limit = 50
	}
	if f.Limit < 0 || f.Limit > store.MaxList {
		return nil, fmt.Errorf("list jobs: limit %d: want 1 to %d", f.Limit, store.MaxList)
	}
	if f.State != "" && !validState(f.State) {
		return nil, fmt.Errorf("list jobs: unknown state %q", f.State)
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	state := ""
	if f.State != "" {
		// A literal (checked above), so that the planner may use the
		// partial index of that state.
		state = "state = '" + string(f.State) + "'"
	}
	if f.Type != "" {
		where = append(where, "type = "+arg(f.Type))
	}
	if f.Schedule != "" {
		where = append(where, "schedule = "+arg(f.Schedule))
	}
	var query string
	before := ""
	if f.BeforeID > 0 {
		before = "id < " + arg(f.BeforeID)
	}
	if (f.Type != "" || f.Schedule != "") && f.KeyPrefix == "" {
		inner := `SELECT ` + jobColumns + ` FROM jobs`
		if w := nonEmpty(state, before); len(w) > 0 {
			inner += ` WHERE ` + strings.Join(w, " AND ")
		}
		query = `SELECT ` + jobColumns + ` FROM (` + inner + ` ORDER BY id DESC LIMIT ` + arg(store.ListScanBound) + `) s WHERE ` +
			strings.Join(where, " AND ")
	} else {
		where = append(nonEmpty(state, before), where...)
		if f.KeyPrefix != "" {
			// A range of the key index (key collates as "C": by bytes),
			// not LIKE, whose wildcards a key may contain.
			where = append(where, "key >= "+arg(f.KeyPrefix)+" AND key < "+arg(f.KeyPrefix+"\U0010FFFF"))
		}
		query = `SELECT ` + jobColumns + ` FROM jobs`
		if len(where) > 0 {
			query += ` WHERE ` + strings.Join(where, " AND ")
		}
	}
	query += ` ORDER BY id DESC LIMIT ` + arg(f.Limit)
	return s.jobs(ctx, query, args...)
}

// nonEmpty returns the terms of ts that are not empty.
func nonEmpty(ts ...string) []string {
	var out []string
	for _, t := range ts {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// attemptsSQL lists a job's attempt rows and, for a done job whose
// successful attempt has no row of its own, that attempt as the job row
// records it.
const attemptsSQL = `SELECT job_id, attempt, worker, started_at, finished_at, outcome, error, output, 0 AS synthetic, id
FROM attempts WHERE job_id = $1
UNION ALL
SELECT id, attempt, coalesce(owner, ''), coalesce(started_at, finished_at), finished_at, 'done', '', '', 1, 0
FROM jobs WHERE id = $1 AND state = 'done' AND NOT EXISTS (
	SELECT 1 FROM attempts a WHERE a.job_id = jobs.id AND a.attempt = jobs.attempt AND a.outcome = 'done')
ORDER BY attempt, synthetic, id`

// Attempts returns the attempts of a job by number, in the order they were
// recorded within a number.
func (s *Store) Attempts(ctx context.Context, jobID int64) ([]store.Attempt, error) {
	rows, err := s.pool.Query(ctx, attemptsSQL, jobID)
	if err != nil {
		return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
	}
	defer rows.Close()
	var out []store.Attempt
	for rows.Next() {
		var a store.Attempt
		var synthetic int
		var id int64
		if err := rows.Scan(&a.JobID, &a.Number, &a.Worker, &a.StartedAt, &a.FinishedAt, &a.Outcome, &a.Error, &a.Output, &synthetic, &id); err != nil {
			return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
		}
		a.StartedAt, a.FinishedAt = a.StartedAt.UTC(), a.FinishedAt.UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("attempts of job %d: %w", jobID, err)
	}
	return out, nil
}

// Dead returns up to limit dead jobs, oldest first.
func (s *Store) Dead(ctx context.Context, limit int) ([]*store.Job, error) {
	return s.jobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE state = 'dead' ORDER BY id LIMIT $1`, limit)
}

// statsSQL counts every job: for a schema migrated by a program that kept
// no job_counts, opened read-only.
const statsSQL = `SELECT state, type, count(*) FROM jobs GROUP BY state, type`

// Stats counts jobs by state and type, from job_counts, and measures the
// oldest ready job of each type, walking the ready jobs once.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	now := s.now()
	st := store.Stats{Counts: map[store.State]map[string]int{}, Total: map[store.State]int{}, At: now}
	query := countsSQL
	if s.noCounts {
		query = statsSQL
	}
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state store.State
		var typ string
		var n int
		if err := rows.Scan(&state, &typ, &n); err != nil {
			return st, fmt.Errorf("stats: %w", err)
		}
		if st.Counts[state] == nil {
			st.Counts[state] = map[string]int{}
		}
		st.Counts[state][typ] = n
		st.Total[state] += n
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	st.Dead = st.Total[store.StateDead]
	if st.ReadySince, err = s.readySince(ctx, now); err != nil {
		return st, fmt.Errorf("stats: %w", err)
	}
	for _, at := range st.ReadySince {
		st.OldestReady = max(st.OldestReady, now.Sub(at))
	}
	return st, nil
}

// readySinceSQL walks the ready jobs once, through the claim index.
const readySinceSQL = `SELECT type, min(run_at) FROM jobs WHERE state = 'pending' AND run_at <= $1 GROUP BY type`

func (s *Store) readySince(ctx context.Context, now time.Time) (map[string]time.Time, error) {
	rows, err := s.pool.Query(ctx, readySinceSQL, ts(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var typ string
		var at time.Time
		if err := rows.Scan(&typ, &at); err != nil {
			return nil, err
		}
		out[typ] = at
	}
	return out, rows.Err()
}

// finishesSQL seeks jobs_schedule_finished twice per schedule: the newest
// done job, and the newest dead one.
const finishesSQL = `SELECT n.name,
	(SELECT max(finished_at) FROM jobs WHERE schedule = n.name AND state = 'done' AND finished_at IS NOT NULL),
	(SELECT max(finished_at) FROM jobs WHERE schedule = n.name AND state = 'dead' AND finished_at IS NOT NULL)
FROM unnest($1::text[]) AS n(name)`

// Finishes returns, per schedule of schedules that has a job kept, when
// its jobs last finished.
func (s *Store) Finishes(ctx context.Context, schedules []string) (map[string]store.Finishes, error) {
	out := make(map[string]store.Finishes, len(schedules))
	rows, err := s.pool.Query(ctx, finishesSQL, schedules)
	if err != nil {
		return nil, fmt.Errorf("finishes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var done, dead *time.Time
		if err := rows.Scan(&name, &done, &dead); err != nil {
			return nil, fmt.Errorf("finishes: %w", err)
		}
		var f store.Finishes
		switch {
		case done == nil && dead == nil:
			continue
		case done == nil:
			f.LastCompletion = *dead
		case dead == nil || done.After(*dead):
			f.LastSuccess, f.LastCompletion = *done, *done
		default:
			f.LastSuccess, f.LastCompletion = *done, *dead
		}
		out[name] = f
	}
	return out, rows.Err()
}

// schedulesSQL lists the distinct schedules of the jobs by walking
// jobs_schedule_at once per schedule (a skip-scan), not every job.
const schedulesSQL = `WITH RECURSIVE s(name) AS (
	(SELECT schedule FROM jobs WHERE schedule IS NOT NULL ORDER BY schedule LIMIT 1)
	UNION ALL
	SELECT (SELECT schedule FROM jobs WHERE schedule IS NOT NULL AND schedule > s.name ORDER BY schedule LIMIT 1)
	FROM s WHERE s.name IS NOT NULL
)`

// lastRunsSQL takes, per schedule, its newest job by instant (then id),
// manual runs (no instant) last, as SQLite orders NULL.
const lastRunsSQL = schedulesSQL + `
SELECT ` + jobColumnsOf + ` FROM s CROSS JOIN LATERAL (
	SELECT * FROM jobs j WHERE j.schedule = s.name
	ORDER BY j.scheduled_at DESC NULLS LAST, j.id DESC LIMIT 1) jobs
WHERE s.name IS NOT NULL`

const lastManualRunsSQL = schedulesSQL + `
SELECT ` + jobColumnsOf + ` FROM s CROSS JOIN LATERAL (
	SELECT * FROM jobs j WHERE j.schedule = s.name AND j.scheduled_at IS NULL
	ORDER BY j.scheduled_at DESC NULLS LAST, j.id DESC LIMIT 1) jobs
WHERE s.name IS NOT NULL`

func (s *Store) bySchedule(ctx context.Context, query string) (map[string]*store.Job, error) {
	js, err := s.jobs(ctx, query)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*store.Job, len(js))
	for _, j := range js {
		out[j.Schedule] = j
	}
	return out, nil
}

// LastRuns returns, per schedule, its newest job: the one of its latest
// instant, or its newest manual run when it has no instant's job.
func (s *Store) LastRuns(ctx context.Context) (map[string]*store.Job, error) {
	out, err := s.bySchedule(ctx, lastRunsSQL)
	if err != nil {
		return nil, fmt.Errorf("last runs: %w", err)
	}
	return out, nil
}

// LastManualRuns returns, per schedule, its newest job that stands for no
// instant (a manual run).
func (s *Store) LastManualRuns(ctx context.Context) (map[string]*store.Job, error) {
	out, err := s.bySchedule(ctx, lastManualRunsSQL)
	if err != nil {
		return nil, fmt.Errorf("last manual runs: %w", err)
	}
	return out, nil
}

// ScheduleJobs returns up to limit jobs of a schedule, newest instant first.
func (s *Store) ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*store.Job, error) {
	return s.jobs(ctx, `SELECT `+jobColumns+` FROM jobs WHERE schedule = $1
ORDER BY scheduled_at DESC NULLS LAST, id DESC LIMIT $2`, schedule, limit)
}

// countStates adds the (state, count) rows of query to o.
func (s *Store) countStates(ctx context.Context, o *store.InstantOutcome, query string, args ...any) error {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var st store.State
		var n int
		if err := rows.Scan(&st, &n); err != nil {
			return err
		}
		o.States[st] = n
		o.Jobs += n
	}
	return rows.Err()
}

// Instant returns how the jobs of schedule's instant at stand.
func (s *Store) Instant(ctx context.Context, schedule string, at time.Time) (store.InstantOutcome, error) {
	o := store.InstantOutcome{Schedule: schedule, ScheduledAt: at, States: map[store.State]int{}}
	if err := s.countStates(ctx, &o, `SELECT state, count(*) FROM jobs
WHERE schedule = $1 AND scheduled_at = $2 GROUP BY state`, schedule, ts(at)); err != nil {
		return o, fmt.Errorf("instant of %s: %w", schedule, err)
	}
	return o, nil
}

// ManualRun returns how the jobs of one manual run stand: the up to span newest
// jobs of schedule at or below lastID that stand for no instant and whose
// key ends with keySuffix. Enqueues on other connections may draw ids
// among the run's, so the read walks the schedule's manual runs in
// jobs_schedule_at down from lastID, not a range of ids. Keys are unique,
// so a run has at most one job per item with its suffix.
func (s *Store) ManualRun(ctx context.Context, schedule string, lastID int64, span int, keySuffix string) (store.InstantOutcome, error) {
	o := store.InstantOutcome{Schedule: schedule, States: map[store.State]int{}}
	if keySuffix == "" {
		return o, fmt.Errorf("run of %s: empty key suffix", schedule)
	}
	if err := s.countStates(ctx, &o, `SELECT state, count(*) FROM (
	SELECT state FROM jobs
	WHERE schedule = $1 AND scheduled_at IS NULL AND id <= $2 AND right(key, length($4)) = $4
	ORDER BY scheduled_at DESC NULLS LAST, id DESC LIMIT $3) r
GROUP BY state`, schedule, lastID, max(span, 1), keySuffix); err != nil {
		return o, fmt.Errorf("run of %s: %w", schedule, err)
	}
	return o, nil
}

const skipColumns = `schedule, item, scheduled_at, reason, recorded_at`

func scanSkip(r pgx.Row) (store.Skip, error) {
	var sk store.Skip
	if err := r.Scan(&sk.Schedule, &sk.Item, &sk.ScheduledAt, &sk.Reason, &sk.RecordedAt); err != nil {
		return sk, err
	}
	sk.ScheduledAt, sk.RecordedAt = sk.ScheduledAt.UTC(), sk.RecordedAt.UTC()
	return sk, nil
}

func (s *Store) skips(ctx context.Context, query string, args ...any) ([]store.Skip, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Skip
	for rows.Next() {
		sk, err := scanSkip(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sk)
	}
	return out, rows.Err()
}

// ListSkips returns up to limit (1 to MaxList) skipped instants, newest
// instant first: of schedule, or of every schedule when it is empty.
func (s *Store) ListSkips(ctx context.Context, schedule string, limit int) ([]store.Skip, error) {
	if err := store.CheckLimit("list skips", limit); err != nil {
		return nil, err
	}
	var out []store.Skip
	var err error
	if schedule == "" {
		out, err = s.skips(ctx, `SELECT `+skipColumns+` FROM skips
ORDER BY scheduled_at DESC, schedule DESC, item DESC LIMIT $1`, limit)
	} else {
		out, err = s.skips(ctx, `SELECT `+skipColumns+` FROM skips
WHERE schedule = $1 ORDER BY scheduled_at DESC, item DESC LIMIT $2`, schedule, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("list skips: %w", err)
	}
	return out, nil
}

// SkipAt returns the skip of schedule's item at the instant at: one of
// that item, or one of the whole schedule (item ""), or ErrNotFound.
func (s *Store) SkipAt(ctx context.Context, schedule, item string, at time.Time) (store.Skip, error) {
	sk, err := scanSkip(s.pool.QueryRow(ctx, `SELECT `+skipColumns+` FROM skips
WHERE schedule = $1 AND item IN ($2, '') AND scheduled_at = $3 ORDER BY item DESC LIMIT 1`, schedule, item, ts(at)))
	if errNoRows(err) {
		return sk, fmt.Errorf("skip of %s %s at %s: %w", schedule, item, at.UTC().Format(time.RFC3339), store.ErrNotFound)
	}
	if err != nil {
		return sk, fmt.Errorf("skip of %s %s at %s: %w", schedule, item, at.UTC().Format(time.RFC3339), err)
	}
	return sk, nil
}

// SkipSummary counts the skips of schedule's instants after since (at
// most MaxSkipCount) and returns its newest skip: two reads in one round
// trip (-status makes one summary per schedule).
func (s *Store) SkipSummary(ctx context.Context, schedule string, since time.Time) (store.SkipSummary, error) {
	var sum store.SkipSummary
	b := &pgx.Batch{}
	b.Queue(`SELECT count(*) FROM (SELECT 1 FROM skips
WHERE schedule = $1 AND scheduled_at > $2 LIMIT $3) s`, schedule, ts(since), store.MaxSkipCount)
	b.Queue(`SELECT `+skipColumns+` FROM skips
WHERE schedule = $1 ORDER BY scheduled_at DESC LIMIT 1`, schedule)
	err := readBatch(s.pool.SendBatch(ctx, b), func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&sum.Count); err != nil {
			return err
		}
		last, err := scanSkip(br.QueryRow())
		switch {
		case errNoRows(err):
		case err != nil:
			return err
		default:
			sum.Last = &last
		}
		return nil
	})
	if err != nil {
		return store.SkipSummary{}, fmt.Errorf("skips of %s: %w", schedule, err)
	}
	return sum, nil
}
