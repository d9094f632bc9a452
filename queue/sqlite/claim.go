package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

const jobColumns = `id, key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item,
scheduled_at, lease_until, owner, last_error, created_at, started_at, finished_at, version, retried_at`

// jobsQuery returns q, a read of jobColumns, as the file can answer it
// (see Store.noVersions and Store.noRetriedAt).
func (s *Store) jobsQuery(q string) string {
	if !s.noVersions && !s.noRetriedAt {
		return q
	}
	cols := jobColumns
	if s.noVersions {
		cols = strings.Replace(cols, "finished_at, version", "finished_at, 1", 1)
	}
	if s.noRetriedAt {
		cols = strings.Replace(cols, ", retried_at", ", NULL", 1)
	}
	return strings.Replace(q, jobColumns, cols, 1)
}

type scanner interface{ Scan(dest ...any) error }

// claimColumns are the columns a claim returns: those it does not set
// itself, which scanClaimed fills from what the claim wrote.
const claimColumns = `id, key, type, payload, attempt, max_attempts, priority, run_at, schedule, item,
scheduled_at, last_error, created_at, version, retried_at`

// scanClaimed reads a row of claimColumns as the running job that the claim
// by owner at now, leased until until, made of it.
func scanClaimed(s scanner, owner string, until, now time.Time) (*store.Job, error) {
	var j store.Job
	var payload string
	var runAt, createdAt int64
	var schedule sql.NullString
	var scheduledAt, retriedAt sql.NullInt64
	if err := s.Scan(&j.ID, &j.Key, &j.Type, &payload, &j.Attempt, &j.MaxAttempts, &j.Priority,
		&runAt, &schedule, &j.Item, &scheduledAt, &j.LastError, &createdAt, &j.Version, &retriedAt); err != nil {
		return nil, err
	}
	j.Payload = json.RawMessage(payload)
	j.State = store.StateRunning
	j.RunAt = time.UnixMilli(runAt).UTC()
	j.Schedule = schedule.String
	j.ScheduledAt = fromMS(scheduledAt)
	j.LeaseUntil = time.UnixMilli(ms(until)).UTC()
	j.Owner = owner
	j.CreatedAt = time.UnixMilli(createdAt).UTC()
	j.StartedAt = time.UnixMilli(ms(now)).UTC()
	j.RetriedAt = fromMS(retriedAt)
	return &j, nil
}

func scanJob(s scanner) (*store.Job, error) {
	var j store.Job
	var payload string
	var runAt, createdAt int64
	var schedule, owner sql.NullString
	var scheduledAt, leaseUntil, startedAt, finishedAt, retriedAt sql.NullInt64
	if err := s.Scan(&j.ID, &j.Key, &j.Type, &payload, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority,
		&runAt, &schedule, &j.Item, &scheduledAt, &leaseUntil, &owner, &j.LastError, &createdAt,
		&startedAt, &finishedAt, &j.Version, &retriedAt); err != nil {
		return nil, err
	}
	j.Payload = json.RawMessage(payload)
	j.RunAt = time.UnixMilli(runAt).UTC()
	j.Schedule = schedule.String
	j.ScheduledAt = fromMS(scheduledAt)
	j.LeaseUntil = fromMS(leaseUntil)
	if j.State == store.StateRunning {
		// A done job keeps the worker that completed it in owner, for its
		// attempt history (see Attempts); it holds no lease.
		j.Owner = owner.String
	}
	j.CreatedAt = time.UnixMilli(createdAt).UTC()
	j.StartedAt = fromMS(startedAt)
	j.FinishedAt = fromMS(finishedAt)
	j.RetriedAt = fromMS(retriedAt)
	return &j, nil
}

// claimSQL takes up to N ready jobs in claim order, of version 1 of the
// types in a JSON array (those the pool has a handler for and runs without
// a limit), in one statement: no other connection can take the same rows,
// since the write lock is held from the SELECT to the UPDATE. It walks
// jobs_ready, whose order is the claim order, and stops after LIMIT rows;
// without INDEXED BY the planner may pick jobs_pending_run_at and sort every
// ready job, which is slow when a backlog has built up. N is written into the
// text (see claimQuery): a bound LIMIT makes SQLite recompile the statement
// at every bind.
const claimSQL = claimPrefix + ` owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (
	SELECT id` + claimableJobs + `
)
RETURNING ` + claimColumns

// claimVersionsSQL is claimSQL for a pool that takes other versions than 1
// of some type (see claimableVersions).
const claimVersionsSQL = claimPrefix + ` owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (
	SELECT id` + claimableVersions + `
)
RETURNING ` + claimColumns

// claimableJobs is what claimSQL takes, shared with claimWindowSQL, which
// looks at the same rows first: ?3 is now, ?4 the types to take. A job of
// another type, or of another version than 1, is passed over and stays
// pending: no handler here, or a type with a concurrency limit, claimed by
// claimTypeSQL, or a version for a pool that accepts it. The type list is
// read once per statement into an ephemeral index, so filtering costs one
// lookup per row walked; ready jobs that no handler here can take, at the
// head of the claim order, are walked past at each claim (see README,
// "Jobs whose task the daemon does not know").
//
// This is the claim of every pool that runs version 1 alone of each type,
// the common case: the version is one more column of the row that the
// walk of jobs_ready already reads for the type, and the plan is the walk
// it was before jobs had versions. A pool that takes other versions has
// claimableVersions, a statement of its own, so that this one does not
// carry a second list to read and test for nothing.
const claimableJobs = ` FROM jobs INDEXED BY jobs_ready
	WHERE state = 'pending' AND run_at <= ?3 AND type IN (SELECT value FROM json_each(?4)) AND version = 1
	ORDER BY priority DESC, run_at, id
	LIMIT N`

// claimableVersions is claimableJobs for a pool that takes other versions
// than 1 of some type: ?4 holds the types whose jobs of version 1 it takes,
// ?5 the (type, version) pairs of the other versions it takes, as a JSON
// array of [type, version]. The pairs are only looked up for a job of
// another version than 1.
const claimableVersions = ` FROM jobs INDEXED BY jobs_ready
	WHERE state = 'pending' AND run_at <= ?3
		AND (version = 1 AND type IN (SELECT value FROM json_each(?4))
			OR version <> 1 AND (type, version) IN (SELECT value->>0, value->>1 FROM json_each(?5)))
	ORDER BY priority DESC, run_at, id
	LIMIT N`

// claimTypeSQL is claimSQL for one type, ?4, of the versions in the JSON
// array ?5.
const claimTypeSQL = claimPrefix + ` owner = ?1, lease_until = ?2, started_at = ?3, finished_at = NULL
WHERE id IN (
	SELECT id FROM jobs INDEXED BY jobs_ready
	WHERE state = 'pending' AND run_at <= ?3 AND type = ?4 AND version IN (SELECT value FROM json_each(?5))
	ORDER BY priority DESC, run_at, id
	LIMIT N
)
RETURNING ` + claimColumns

// claimQuery returns the text of claimSQL or claimTypeSQL for a limit of n.
// Each distinct text is prepared once and cached (see txn).
func claimQuery(base string, n int) string {
	return strings.Replace(base, "LIMIT N", "LIMIT "+strconv.Itoa(n), 1)
}

// claimRequest says how many jobs a pool can take: n of the types in
// types, plus up to limited[t] of each limited type t, within n overall.
// Jobs of other types are not the pool's to take.
type claimRequest struct {
	owner   string
	lease   time.Duration
	n       int
	types   string // JSON array of the handled types without a limit whose version 1 is taken
	pairs   string // JSON array of the other [type, version] taken of those types; "[]" for none
	limited map[string]int
	// versions are the versions taken of the limited types (see
	// store.Versions).
	versions store.Versions
	// prefetch is how many of the n are claimed ahead of a free worker.
	// Among those, a claim stops before the first job on its last attempt
	// (see claim).
	prefetch int
	// careful makes the claim look at the ready jobs before taking them, so
	// that it stops before a job on its last attempt instead of taking and
	// giving back the jobs from it on. The pool asks for it while such jobs
	// are about.
	stopBeforeLast bool
	// rated are the types with a rate limit, claimed last.
	rated []store.RatedClaim
}

// claim takes jobs for r. held reports that it gave back prefetched jobs
// from a job on its last attempt on; rateWait is when a job that a rate
// limit held back may start (zero: none was).
func claim(ctx context.Context, tx txn, now time.Time, r claimRequest) (jobs []*store.Job, held bool, rateWait time.Time, err error) {
	if r.n <= 0 {
		return nil, false, time.Time{}, nil
	}
	limited := make([]string, 0, len(r.limited))
	for t := range r.limited {
		limited = append(limited, t)
	}
	sort.Strings(limited)
	until := now.Add(r.lease)
	scan := func(rows *sql.Rows, err error) error {
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j, err := scanClaimed(rows, r.owner, until, now)
			if err != nil {
				return err
			}
			tx.counts.Move(j.Type, store.StatePending, store.StateRunning, 1)
			jobs = append(jobs, j)
		}
		return rows.Err()
	}
	n := r.n
	if r.types == "[]" && r.pairs == "[]" {
		n = 0
	}
	if n > 0 && r.stopBeforeLast && r.prefetch > 0 {
		var err error
		if n, err = claimable(ctx, tx, now, r.types, r.pairs, r.n, max(r.n-r.prefetch, 0)); err != nil {
			return nil, false, time.Time{}, err
		}
	}
	if n > 0 {
		q, args := claimSQL, []any{r.owner, ms(until), ms(now), r.types}
		if r.pairs != "[]" {
			q, args = claimVersionsSQL, append(args, r.pairs)
		}
		if err := scan(tx.query(ctx, claimQuery(q, n), args...)); err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim: %w", err)
		}
	}
	for _, t := range limited {
		room := min(r.limited[t], r.n-len(jobs))
		if room <= 0 {
			continue
		}
		if err := scan(tx.query(ctx, claimQuery(claimTypeSQL, room), r.owner, ms(until), ms(now), t, versionsJSON(r.versions.Of(t)))); err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim %s: %w", t, err)
		}
	}
	store.SortClaimOrder(jobs)
	if cut := store.PrefetchCut(jobs, r.n, r.prefetch); cut < len(jobs) {
		if err := unclaim(ctx, tx, r.owner, jobs[cut:]); err != nil {
			return nil, false, time.Time{}, err
		}
		jobs, held = jobs[:cut], true
	}
	jobs, rateWait, err = store.ClaimRated(jobs, r.rated, r.n, func(rc store.RatedClaim, room int) ([]*store.Job, time.Time, error) {
		return claimRated(ctx, tx, r.owner, until, now, rc, room)
	})
	if err != nil {
		return nil, false, time.Time{}, err
	}
	return jobs, held, rateWait, nil
}

// claimWindowSQL reads, in claim order, whether each of the next N jobs
// claimSQL would take is on its last attempt; claimWindowVersionsSQL the
// same of claimVersionsSQL.
const (
	claimWindowSQL         = claimWindowPrefix + claimableJobs
	claimWindowVersionsSQL = claimWindowPrefix + claimableVersions
)

const claimWindowPrefix = "SELECT attempt + 1 >= max_attempts"

// claimable returns how many of the next n jobs of claimSQL to take so that
// none past the first keep is on its last attempt, nor after one that is.
func claimable(ctx context.Context, tx txn, now time.Time, types, pairs string, n, keep int) (int, error) {
	// ?1 and ?2 are claimSQL's owner and lease, unused here.
	q, args := claimWindowSQL, []any{nil, nil, ms(now), types}
	if pairs != "[]" {
		q, args = claimWindowVersionsSQL, append(args, pairs)
	}
	rows, err := tx.query(ctx, claimQuery(q, n), args...)
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var last bool
		if err := rows.Scan(&last); err != nil {
			return 0, fmt.Errorf("claim: %w", err)
		}
		if last && i >= keep {
			return i, nil
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	return n, nil
}

// unclaimSQL gives claimed jobs back as they were: same place in the claim
// order, attempt not spent.
const unclaimSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, attempt = attempt - 1
WHERE id IN (SELECT value FROM json_each(?1)) AND owner = ?2 AND state = 'running'
RETURNING type`

func unclaim(ctx context.Context, tx txn, owner string, jobs []*store.Job) error {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	arg, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	rows, err := tx.query(ctx, unclaimSQL, string(arg), owner)
	if _, err := tx.moveTypes(rows, err, store.StateRunning, store.StatePending); err != nil {
		return fmt.Errorf("give back prefetched jobs: %w", err)
	}
	return nil
}

// The outcome statements are fenced on (id, owner, attempt, running): a
// worker whose lease was reclaimed, and maybe claimed again elsewhere, changes
// nothing.
const (
	finishRetrySQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, run_at = ?, last_error = ?
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`
	finishDeadSQL = `UPDATE jobs SET state = 'dead', owner = NULL, lease_until = NULL, finished_at = ?, last_error = ?
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`
	// A released attempt is given back: shutdown interrupted it, so it does
	// not count against max_attempts.
	finishReleasedSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, run_at = ?, attempt = attempt - 1
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`
)

// finishDonePrefix starts the statements that complete jobs in a group:
//
//	WITH d(id, attempt, finished, worker) AS (VALUES (?, ?, ?, ?), ...)
//	UPDATE jobs SET state = 'done', owner = d.worker, ... FROM d
//	WHERE jobs.id = d.id AND jobs.attempt = d.attempt AND jobs.owner = ? AND jobs.state = 'running'
//
// fenced like the other outcome statements. Its parameters are anonymous:
// the driver looks up the name of every parameter it binds, which costs a
// walk of the list of named ones. A done job keeps the name of
// the worker that ran it in owner: with started_at and finished_at, the row
// itself is the record of its successful attempt (see Attempts), so that a
// completion writes one row, not two.
const finishDonePrefix = "WITH d(id, attempt, finished, worker) AS (VALUES "

// finishDoneRows are the group sizes of the completion statements, largest
// first: a group of n jobs runs as statements of these sizes, the last one
// padded with rows of NULLs, which match nothing. Each size is one text,
// prepared once.
var finishDoneRows = []int{128, 32, 8, 1}

// finishDoneSQL returns the completion statement for n jobs.
func finishDoneSQL(n int) string {
	var b strings.Builder
	b.WriteString(finishDonePrefix)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?)")
	}
	b.WriteString(`)
UPDATE jobs SET state = 'done', owner = d.worker, lease_until = NULL, last_error = '', finished_at = d.finished
FROM d WHERE jobs.id = d.id AND jobs.attempt = d.attempt AND jobs.owner = ? AND jobs.state = 'running'`)
	return b.String()
}

// doneHeldSQL tells whether a completion took effect: the job is done, by
// that worker, at that attempt. It is asked only when a group completion
// changed fewer rows than it carried.
const doneHeldSQL = `SELECT count(*) FROM jobs WHERE id = ? AND attempt = ? AND owner = ? AND state = 'done'`

// insertAttemptsSQL records many attempts in one statement. A stale
// result may come after its job was done by another pool and purged: its
// attempt is not recorded (the job's attempts went with it), rather than
// failing the trip, and every trip of the pool after it, on the foreign
// key.
const insertAttemptsSQL = `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error, output)
SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7 FROM json_each(?)
WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.id = value->>0)`

// finish records results in tx. It returns, for each result, whether the
// fence held; a result that lost its lease is recorded as a stale attempt.
// Completions, the common case, take one statement per group of up to 128
// and write no attempt row unless the attempt printed something.
func finish(ctx context.Context, tx txn, owner string, rs []store.Result) ([]bool, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	ok := make([]bool, len(rs))
	var done []int // indexes in rs
	for i, r := range rs {
		if r.Outcome == store.OutcomeDone {
			done = append(done, i)
		}
	}
	if err := finishDone(ctx, tx, owner, rs, done, ok); err != nil {
		return nil, err
	}
	for i, r := range rs {
		j := r.Job
		var q string
		var args []any
		to := store.StatePending
		switch r.Outcome {
		case store.OutcomeDone:
			continue
		case store.OutcomeRetry:
			q, args = finishRetrySQL, []any{ms(r.RetryAt), capText(r.Error), j.ID, j.Owner, j.Attempt}
		case store.OutcomeDead:
			q, args, to = finishDeadSQL, []any{ms(r.Finished), capText(r.Error), j.ID, j.Owner, j.Attempt}, store.StateDead
		case store.OutcomeReleased:
			q, args = finishReleasedSQL, []any{ms(r.Finished), j.ID, j.Owner, j.Attempt}
		case store.OutcomeCancelled:
			q, args, to = finishCancelledSQL, []any{ms(r.Finished), capText(r.Error), j.ID, j.Owner, j.Attempt}, store.StateCancelled
		default:
			return nil, fmt.Errorf("finish job %d: unexpected outcome %q", j.ID, r.Outcome)
		}
		res, err := tx.exec(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("finish job %d: %w", j.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("finish job %d: %w", j.ID, err)
		}
		ok[i] = n == 1
		tx.counts.Move(j.Type, store.StateRunning, to, n)
	}
	if err := settleCancelled(ctx, tx, rs, ok, rs[len(rs)-1].Finished); err != nil {
		return nil, err
	}
	var attempts [][8]any
	for i, r := range rs {
		outcome := r.Outcome
		if !ok[i] {
			outcome = store.OutcomeStale
		} else if outcome == store.OutcomeDone && r.Output == "" {
			continue // the job row records it
		}
		attempts = append(attempts, [8]any{r.Job.ID, r.Job.Attempt, r.Worker, ms(r.Started), ms(r.Finished), outcome, capText(r.Error), r.Output})
	}
	if len(attempts) == 0 {
		return ok, nil
	}
	arg, err := json.Marshal(attempts)
	if err != nil {
		return nil, err
	}
	if _, err := tx.exec(ctx, insertAttemptsSQL, string(arg)); err != nil {
		return nil, fmt.Errorf("record attempts: %w", err)
	}
	return ok, nil
}

// finishDone completes the results rs[i] for i in done, in groups, setting
// ok[i] where the fence held.
func finishDone(ctx context.Context, tx txn, owner string, rs []store.Result, done []int, ok []bool) error {
	for len(done) > 0 {
		size := finishDoneRows[len(finishDoneRows)-1]
		for _, s := range finishDoneRows {
			if len(done) >= s {
				size = s
				break
			}
		}
		group := done[:min(size, len(done))]
		done = done[len(group):]
		args := make([]any, 4*size+1)
		for k, i := range group {
			r := rs[i]
			args[4*k], args[4*k+1], args[4*k+2], args[4*k+3] = r.Job.ID, r.Job.Attempt, ms(r.Finished), r.Worker
		}
		args[4*size] = owner
		res, err := tx.exec(ctx, finishDoneSQL(size), args...)
		if err != nil {
			return fmt.Errorf("finish jobs: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("finish jobs: %w", err)
		}
		if int(n) == len(group) {
			for _, i := range group {
				ok[i] = true
				tx.counts.Move(rs[i].Job.Type, store.StateRunning, store.StateDone, 1)
			}
			continue
		}
		// Some fence failed: ask which completions took effect.
		for _, i := range group {
			r := rs[i]
			var held int
			if err := tx.queryRow(ctx, doneHeldSQL, r.Job.ID, r.Job.Attempt, r.Worker).Scan(&held); err != nil {
				return fmt.Errorf("finish job %d: %w", r.Job.ID, err)
			}
			ok[i] = held == 1
			if ok[i] {
				tx.counts.Move(r.Job.Type, store.StateRunning, store.StateDone, 1)
			}
		}
	}
	return nil
}

const heartbeatSQL = `UPDATE jobs SET lease_until = ? WHERE owner = ? AND state = 'running'`

func heartbeat(ctx context.Context, tx txn, owner string, until time.Time) (int64, error) {
	res, err := tx.exec(ctx, heartbeatSQL, ms(until), owner)
	if err != nil {
		return 0, fmt.Errorf("heartbeat: %w", err)
	}
	return res.RowsAffected()
}

const expiredSQL = `SELECT id, attempt, max_attempts, owner, started_at FROM jobs
WHERE state = 'running' AND lease_until < ?`

// reclaimJobSQL returns an expired lease to pending, or to dead when no
// attempt is left, or to cancelled when a cancel was requested (see
// RequestCancel). The attempt stays spent: the worker may have run the job to
// the end before it vanished.
const reclaimJobSQL = `UPDATE jobs SET
	state = CASE WHEN cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN attempt >= max_attempts THEN 'dead' ELSE 'pending' END,
	finished_at = CASE WHEN cancel_requested_at IS NOT NULL OR attempt >= max_attempts THEN ?1 ELSE NULL END,
	run_at = ?1, last_error = ?2, owner = NULL, lease_until = NULL
WHERE id = ?3 AND owner = ?4 AND attempt = ?5 AND state = 'running'
RETURNING type, state`

const reclaimAttemptSQL = `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
VALUES (?, ?, ?, ?, ?, 'lease_expired', ?)`

// latestLeaseSQL reads the latest end of a running job's lease.
const latestLeaseSQL = `SELECT max(lease_until) FROM jobs WHERE state = 'running'`

func latestLease(row *sql.Row) (time.Time, error) {
	var v sql.NullInt64
	if err := row.Scan(&v); err != nil {
		return time.Time{}, fmt.Errorf("latest lease: %w", err)
	}
	return fromMS(v), nil
}

// reclaim takes back the leases expired at now, as s.leases judges them
// across steps of the clock.
func (s *Store) reclaim(ctx context.Context, tx txn, now time.Time) ([]store.Reclaimed, error) {
	held, err := s.leases.Margin(now, func() (time.Time, error) {
		return latestLease(tx.queryRow(ctx, latestLeaseSQL))
	})
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	return reclaim(ctx, tx, now, now.Add(-held))
}

// reclaim takes back the leases that end before expired, as at now.
func reclaim(ctx context.Context, tx txn, now, expired time.Time) ([]store.Reclaimed, error) {
	rows, err := tx.query(ctx, expiredSQL, ms(expired))
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	var rs []store.Reclaimed
	var started []int64
	for rows.Next() {
		var r store.Reclaimed
		var max int
		var st sql.NullInt64
		if err := rows.Scan(&r.ID, &r.Attempt, &max, &r.Owner, &st); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reclaim: %w", err)
		}
		r.Dead = r.Attempt >= max
		rs = append(rs, r)
		started = append(started, st.Int64)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	for i, r := range rs {
		msg := "lease expired: worker " + r.Owner + " stopped heartbeating"
		var typ string
		var to store.State
		if err := tx.queryRow(ctx, reclaimJobSQL, ms(now), msg, r.ID, r.Owner, r.Attempt).Scan(&typ, &to); err != nil {
			return nil, fmt.Errorf("reclaim job %d: %w", r.ID, err)
		}
		tx.counts.Move(typ, store.StateRunning, to, 1)
		if _, err := tx.exec(ctx, reclaimAttemptSQL, r.ID, r.Attempt, r.Owner, started[i], ms(now), msg); err != nil {
			return nil, fmt.Errorf("reclaim job %d: %w", r.ID, err)
		}
	}
	return rs, nil
}

// versionsJSON returns versions as a JSON array. [1], the common case, is
// a constant.
func versionsJSON(versions []int) string {
	if len(versions) == 1 && versions[0] == 1 {
		return "[1]"
	}
	b, err := json.Marshal(versions)
	if err != nil || versions == nil {
		return "[]"
	}
	return string(b)
}

// pairsJSON returns pairs as a JSON array of [type, version]: "[]" for
// none, the common case.
func pairsJSON(pairs []store.TypeVersion) string {
	if len(pairs) == 0 {
		return "[]"
	}
	arr := make([][2]any, len(pairs))
	for i, p := range pairs {
		arr[i] = [2]any{p.Type, p.Version}
	}
	b, err := json.Marshal(arr)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// nextWakeSQL finds when the next pending job becomes ready without an
// index of its own on run_at: it walks jobs_ready once per distinct priority
// (a skip-scan; there are few priorities), taking each one's earliest run_at.
// One index fewer is one page fewer written by every enqueue, claim and
// completion. Only jobs of the types in ?2, at version 1, count: those the
// pool has a handler for and accepts, as in claimableJobs; a job it cannot
// run must not wake it. Jobs of other types or versions at the head of a
// priority are walked past, once per short claim. nextWakeVersionsSQL is
// the same for a pool that takes other versions than 1 of some type, with
// claimableVersions's filter (?3 the pairs).
var (
	nextWakeSQL = nextWakeOf(`type IN (SELECT value FROM json_each(?2)) AND version = 1`)

	nextWakeVersionsSQL = nextWakeOf(`(version = 1 AND type IN (SELECT value FROM json_each(?2))
			OR version <> 1 AND (type, version) IN (SELECT value->>0, value->>1 FROM json_each(?3)))`)
)

func nextWakeOf(filter string) string {
	return `WITH RECURSIVE p(pr) AS (
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT
	(SELECT min((SELECT run_at FROM jobs INDEXED BY jobs_ready WHERE state = 'pending' AND priority = p.pr
		AND ` + filter + `
		ORDER BY run_at LIMIT 1))
	 FROM p WHERE p.pr IS NOT NULL),
	(SELECT min(lease_until) FROM jobs WHERE state = 'running' AND owner != ?1)`
}

// nextWake returns when the next pending job of the types in the JSON
// array types (at version 1) or of the pairs (at other versions) becomes
// ready and when the earliest lease held by another owner expires (zero
// when none).
func (s *Store) nextWake(ctx context.Context, owner, types, pairs string) (ready, lease time.Time, err error) {
	var r, l sql.NullInt64
	q, args := nextWakeSQL, []any{owner, types}
	if pairs != "[]" {
		q, args = nextWakeVersionsSQL, append(args, pairs)
	}
	st, err := s.readStmt(ctx, q)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	if err := st.QueryRowContext(ctx, args...).Scan(&r, &l); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	return fromMS(r), fromMS(l), nil
}
