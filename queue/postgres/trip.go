package postgres

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scheduler-run/scheduler/queue/store"
)

const jobColumns = `id, key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item,
scheduled_at, lease_until, owner, last_error, created_at, started_at, finished_at, version, retried_at`

// jobColumnsOf is jobColumns qualified by the table name jobs, for
// statements that join it (a claim returns the rows it wrote with them).
const jobColumnsOf = `jobs.id, jobs.key, jobs.type, jobs.payload, jobs.state, jobs.attempt, jobs.max_attempts, jobs.priority,
jobs.run_at, jobs.schedule, jobs.item, jobs.scheduled_at, jobs.lease_until, jobs.owner, jobs.last_error, jobs.created_at,
jobs.started_at, jobs.finished_at, jobs.version, jobs.retried_at`

// jobsQuery returns q, a read of jobColumns or jobColumnsOf, as the schema
// can answer it (see Store.noVersions and Store.noRetriedAt).
func (s *Store) jobsQuery(q string) string {
	if !s.noVersions && !s.noRetriedAt {
		return q
	}
	version, vOf, retried, rOf := "version", "jobs.version", "retried_at", "jobs.retried_at"
	if s.noVersions {
		version, vOf = "1", "1"
	}
	if s.noRetriedAt {
		retried, rOf = "NULL::timestamptz", "NULL::timestamptz"
	}
	q = strings.Replace(q, "finished_at, version, retried_at", "finished_at, "+version+", "+retried, 1)
	return strings.Replace(q, "jobs.finished_at, jobs.version, jobs.retried_at", "jobs.finished_at, "+vOf+", "+rOf, 1)
}

func scanJob(row pgx.Row) (*store.Job, error) {
	var j store.Job
	var payload string
	var schedule, owner *string
	var scheduledAt, leaseUntil, startedAt, finishedAt, retriedAt *time.Time
	if err := row.Scan(&j.ID, &j.Key, &j.Type, &payload, &j.State, &j.Attempt, &j.MaxAttempts, &j.Priority,
		&j.RunAt, &schedule, &j.Item, &scheduledAt, &leaseUntil, &owner, &j.LastError, &j.CreatedAt,
		&startedAt, &finishedAt, &j.Version, &retriedAt); err != nil {
		return nil, err
	}
	j.Payload = []byte(payload)
	j.RunAt = j.RunAt.UTC()
	if schedule != nil {
		j.Schedule = *schedule
	}
	j.ScheduledAt = fromTS(scheduledAt)
	j.LeaseUntil = fromTS(leaseUntil)
	if j.State == store.StateRunning && owner != nil {
		// A done job keeps the worker that completed it in owner, for its
		// attempt history (see Attempts); it holds no lease.
		j.Owner = *owner
	}
	j.CreatedAt = j.CreatedAt.UTC()
	j.StartedAt = fromTS(startedAt)
	j.FinishedAt = fromTS(finishedAt)
	j.RetriedAt = fromTS(retriedAt)
	return &j, nil
}

func collectJobs(rows pgx.Rows, err error) ([]*store.Job, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// Trip is one transaction of a pool's loop: results, reclaim, heartbeat,
// presence and claim, in that order, all or nothing, then the changes they
// made to the job counts.
//
// For speed, a trip makes as few round trips to the server as it can,
// rather than one per statement. BEGIN and the statements whose arguments
// are known before it starts (all of them, but for a careful or
// type-limited claim) go in one pipelined batch; what depends on their rows
// and changes jobs' states (a careful or limited claim, the prefetched jobs
// given back) follows, a statement at a time; then a second batch records
// the attempts of the results, writes the count changes, which the rows of
// every statement before it decided, and commits. A trip that completes
// jobs and claims more makes two round trips instead of six.
//
// The count write stays the last write before the commit, in the order of
// store.CountDeltas.Sorted, as in every other transaction of the store:
// the count rows are held only while the trip commits, and two
// transactions never lock them in opposite orders.
func (s *Store) CommitPoolTx(ctx context.Context, t store.PoolTx) (store.PoolTxResult, error) {
	var fin *finishing
	if len(t.Results) > 0 {
		var err error
		if fin, err = newFinishing(t.Owner, t.Results); err != nil {
			return store.PoolTxResult{}, err
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.PoolTxResult{}, fmt.Errorf("trip: %w", err)
	}
	defer conn.Release()
	var expired time.Time // the reclaim's: see store.Leases
	if t.Reclaim {
		if expired, err = s.expired(ctx, conn, t.Now); err != nil {
			return store.PoolTxResult{}, fmt.Errorf("trip: reclaim: %w", err)
		}
	}
	res, ready, err := trip(ctx, conn, t, fin, expired)
	if err != nil {
		// The commit was not reached, or failed: end the transaction, so
		// that the connection goes back to the pool. (Release destroys a
		// connection left in a transaction, when this fails too.)
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "rollback")
		}
		return store.PoolTxResult{}, err
	}
	if ready {
		s.wake()
	}
	return res, nil
}

// trip runs the transaction of t on conn, and commits it. ready reports
// that the trip made jobs pending (a retry, a release, a reclaim) that pools
// on other nodes may take, and must hear of.
func trip(ctx context.Context, conn *pgxpool.Conn, t store.PoolTx, fin *finishing, expired time.Time) (res store.PoolTxResult, ready bool, err error) {
	now := ts(t.Now)
	d := store.CountDeltas{}
	b := &pgx.Batch{}
	b.Queue("begin")
	if fin != nil {
		b.Queue(finishSQL, fin.args...)
	}
	if t.Reclaim {
		b.Queue(reclaimSQL, now, expired)
	}
	if !t.Heartbeat.IsZero() {
		b.Queue(heartbeatSQL, ts(t.Heartbeat), t.Owner)
	}
	if t.Presence != nil {
		queuePresence(b, t.Owner, t.Presence, now)
	}
	var n int // jobs the batch claims
	if c := t.Claim; c != nil && len(c.Types) > 0 && c.N > 0 && !(c.StopBeforeLast && c.Prefetch > 0) && len(c.Limited) == 0 && len(c.Rated) == 0 {
		n = c.N
		b.Queue(claimPlanSQL)
		accepted, versions := acceptedArgs(c.Versions.Split(c.Types))
		q := claimSQL
		if versions {
			q = claimVersionsSQL
		}
		b.Queue(q, append([]any{t.Owner, ts(now.Add(c.Lease)), now, n}, accepted...)...)
	}
	var claimed []*store.Job
	err = readBatch(conn.SendBatch(ctx, b), func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		if fin != nil {
			rows, err := br.Query()
			if res.Fenced, err = fin.fenced(d, rows, err); err != nil {
				return err
			}
		}
		if t.Reclaim {
			rows, err := br.Query()
			if res.Reclaimed, err = collectReclaimed(d, rows, err); err != nil {
				return err
			}
		}
		if !t.Heartbeat.IsZero() {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("heartbeat: %w", err)
			}
		}
		if t.Presence != nil {
			if err := readPresence(br, t.Presence); err != nil {
				return err
			}
		}
		if n > 0 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("claim: %w", err)
			}
			rows, err := br.Query()
			if claimed, err = collectClaimed(d, rows, err); err != nil {
				return fmt.Errorf("claim: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return res, false, err
	}
	if fin != nil {
		for i, r := range t.Results {
			ready = ready || (res.Fenced[i] && (r.Outcome == store.OutcomeReleased || r.Outcome == store.OutcomeRetry))
		}
	}
	ready = ready || len(res.Reclaimed) > 0
	switch {
	case n > 0:
		res.Claimed, res.GaveBack, err = keepClaimed(ctx, conn, d, t.Owner, t.Claim, claimed)
	case t.Claim != nil:
		res.Claimed, res.GaveBack, res.RateWait, err = claim(ctx, conn, d, t.Owner, now, t.Claim)
	}
	if err != nil {
		return res, false, err
	}
	b = &pgx.Batch{}
	attempts := fin != nil && fin.queueAttempts(b, res.Fenced)
	counts := queueCounts(b, d)
	b.Queue("commit")
	err = readBatch(conn.SendBatch(ctx, b), func(br pgx.BatchResults) error {
		if attempts {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("record attempts: %w", err)
			}
		}
		if counts {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("count jobs: %w", err)
			}
		}
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		if tag.String() == "ROLLBACK" {
			return fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback)
		}
		return nil
	})
	return res, ready, err
}

// readBatch reads the results of a batch with read, then closes it. The
// first error, of read or of closing, is returned.
func readBatch(br pgx.BatchResults, read func(pgx.BatchResults) error) error {
	err := read(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// heartbeatSQL extends the leases of the jobs an owner runs.
const heartbeatSQL = `UPDATE jobs SET lease_until = $1 WHERE owner = $2 AND state = 'running'`

// finishSQL records the end of many attempts in one statement, fenced on
// (id, owner, attempt, running): a worker whose lease was reclaimed, and
// maybe claimed again elsewhere, changes nothing. It returns the results
// whose fence held. Per outcome it writes what the SQLite engine's
// statement of that outcome writes:
//
//	done       state done, owner the worker (the row records the attempt), last_error '', finished_at
//	retry      pending at retry_at, with the error
//	dead       dead, finished_at, with the error
//	released   pending now, the attempt given back (attempt - 1)
//	cancelled  cancelled, finished_at, with the error
//
// A retry or release of a job whose cancel was requested ends it cancelled
// at $2 instead: a cancelled job never runs again.
const finishSQL = `UPDATE jobs SET
	state = CASE
		WHEN r.outcome IN ('retry', 'released') AND jobs.cancel_requested_at IS NOT NULL THEN 'cancelled'
		WHEN r.outcome IN ('retry', 'released') THEN 'pending'
		ELSE r.outcome END,
	owner = CASE WHEN r.outcome = 'done' THEN r.worker END,
	lease_until = NULL,
	run_at = CASE r.outcome WHEN 'retry' THEN r.retry_at WHEN 'released' THEN r.finished ELSE jobs.run_at END,
	attempt = CASE WHEN r.outcome = 'released' THEN jobs.attempt - 1 ELSE jobs.attempt END,
	last_error = CASE r.outcome WHEN 'done' THEN '' WHEN 'released' THEN jobs.last_error ELSE r.error END,
	finished_at = CASE
		WHEN r.outcome IN ('done', 'dead', 'cancelled') THEN r.finished
		WHEN jobs.cancel_requested_at IS NOT NULL THEN $2
		ELSE jobs.finished_at END
FROM unnest($1::text[], $3::bigint[], $4::int[], $5::text[], $6::timestamptz[], $7::text[], $8::text[], $9::timestamptz[])
	AS r(owner, id, attempt, outcome, finished, worker, error, retry_at)
WHERE jobs.id = r.id AND jobs.owner = r.owner AND jobs.attempt = r.attempt AND jobs.state = 'running'
RETURNING r.id, r.attempt, jobs.type, jobs.state`

// insertAttemptsSQL records many attempts in one statement. A stale
// result may come after its job was done by another pool and purged: its
// attempt is not recorded (the job's attempts went with it), rather than
// failing the trip, and every trip after it, on the foreign key.
const insertAttemptsSQL = `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error, output)
SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::text[], $8::text[])
	AS a(job_id, attempt, worker, started_at, finished_at, outcome, error, output)
WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.id = a.job_id)`

type fence struct {
	id      int64
	attempt int
}

// finishing is the recording of a trip's results: finishSQL's arguments,
// then, once its rows say which fences held, the attempts to record.
type finishing struct {
	rs       []store.Result
	args     []any // of finishSQL
	workers  []string
	errs     []string
	finished []time.Time
}

func newFinishing(owner string, rs []store.Result) (*finishing, error) {
	n := len(rs)
	owners, ids, attempts := make([]string, n), make([]int64, n), make([]int32, n)
	outcomes, workers, errs := make([]string, n), make([]string, n), make([]string, n)
	finished, retryAt := make([]time.Time, n), make([]time.Time, n)
	for i, r := range rs {
		switch r.Outcome {
		case store.OutcomeDone, store.OutcomeRetry, store.OutcomeDead, store.OutcomeReleased, store.OutcomeCancelled:
		default:
			return nil, fmt.Errorf("finish job %d: unexpected outcome %q", r.Job.ID, r.Outcome)
		}
		// The fence's owner: the trip's for a completion, the job's as
		// claimed for the other outcomes, as in the SQLite engine.
		owners[i] = r.Job.Owner
		if r.Outcome == store.OutcomeDone {
			owners[i] = owner
		}
		ids[i], attempts[i], outcomes[i] = r.Job.ID, int32(r.Job.Attempt), string(r.Outcome)
		workers[i], errs[i] = cleanText(r.Worker), capText(r.Error)
		finished[i], retryAt[i] = ts(r.Finished), ts(r.RetryAt)
	}
	return &finishing{rs: rs, workers: workers, errs: errs, finished: finished,
		args: []any{owners, ts(rs[n-1].Finished), ids, attempts, outcomes, finished, workers, errs, retryAt}}, nil
}

// fenced reads finishSQL's rows: for each result, whether its fence held.
// The jobs it ended are counted in d, as moved from running to the state
// it gave them.
func (f *finishing) fenced(d store.CountDeltas, rows pgx.Rows, err error) ([]bool, error) {
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	defer rows.Close()
	held := map[fence]bool{}
	for rows.Next() {
		var fc fence
		var typ string
		var state store.State
		if err := rows.Scan(&fc.id, &fc.attempt, &typ, &state); err != nil {
			return nil, fmt.Errorf("finish jobs: %w", err)
		}
		held[fc] = true
		d.Move(typ, store.StateRunning, state, 1)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	ok := make([]bool, len(f.rs))
	for i, r := range f.rs {
		ok[i] = held[fence{r.Job.ID, r.Job.Attempt}]
	}
	return ok, nil
}

// queueAttempts queues in b the statement that records the attempts of the
// results, if there are any to record: a result that lost its lease as a
// stale attempt. A completion that printed nothing writes no attempt row:
// the job row records it. It reports whether it queued the statement.
func (f *finishing) queueAttempts(b *pgx.Batch, ok []bool) bool {
	var aIDs []int64
	var aNums []int32
	var aWorkers, aOutcomes, aErrs, aOutputs []string
	var aStarted, aFinished []time.Time
	for i, r := range f.rs {
		outcome := r.Outcome
		if !ok[i] {
			outcome = store.OutcomeStale
		} else if outcome == store.OutcomeDone && r.Output == "" {
			continue
		}
		aIDs, aNums = append(aIDs, r.Job.ID), append(aNums, int32(r.Job.Attempt))
		aWorkers, aOutcomes = append(aWorkers, f.workers[i]), append(aOutcomes, string(outcome))
		aErrs, aOutputs = append(aErrs, f.errs[i]), append(aOutputs, capText(r.Output))
		aStarted, aFinished = append(aStarted, ts(r.Started)), append(aFinished, f.finished[i])
	}
	if len(aIDs) == 0 {
		return false
	}
	b.Queue(insertAttemptsSQL, aIDs, aNums, aWorkers, aStarted, aFinished, aOutcomes, aErrs, aOutputs)
	return true
}

// reclaimSQL returns expired leases to pending, or to dead when no attempt
// is left, or to cancelled when a cancel was requested, and records the
// lost attempts, in one statement. The attempt stays spent: the worker may
// have run the job to its end before it vanished. Rows another
// transaction holds (a completion under way) are skipped, for the next
// reclaim: reclaim waits for no one and needs no lock of its own.
const reclaimSQL = `WITH x AS (
	SELECT id, attempt, max_attempts, owner, started_at FROM jobs
	WHERE state = 'running' AND lease_until < $2
	FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE jobs SET
		state = CASE WHEN jobs.cancel_requested_at IS NOT NULL THEN 'cancelled' WHEN jobs.attempt >= jobs.max_attempts THEN 'dead' ELSE 'pending' END,
		finished_at = CASE WHEN jobs.cancel_requested_at IS NOT NULL OR jobs.attempt >= jobs.max_attempts THEN $1::timestamptz END,
		run_at = $1, last_error = 'lease expired: worker ' || x.owner || ' stopped heartbeating', owner = NULL, lease_until = NULL
	FROM x WHERE jobs.id = x.id
	RETURNING x.id, x.attempt, x.max_attempts, x.owner, x.started_at, jobs.last_error, jobs.type, jobs.state
), a AS (
	INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
	SELECT id, attempt, owner, coalesce(started_at, $1), $1, 'lease_expired', last_error FROM u
)
SELECT id, attempt, owner, attempt >= max_attempts, type, state FROM u ORDER BY id`

// latestLeaseSQL reads the latest end of a running job's lease.
const latestLeaseSQL = `SELECT max(lease_until) FROM jobs WHERE state = 'running'`

// expired returns the instant before which a lease has expired at now, as
// s.leases judges it across steps of the clock (see store.Leases.Margin),
// reading on q when it must.
func (s *Store) expired(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, now time.Time) (time.Time, error) {
	held, err := s.leases.Margin(now, func() (time.Time, error) {
		var t *time.Time
		if err := q.QueryRow(ctx, latestLeaseSQL).Scan(&t); err != nil {
			return time.Time{}, fmt.Errorf("latest lease: %w", err)
		}
		return fromTS(t), nil
	})
	if err != nil {
		return time.Time{}, err
	}
	return ts(now.Add(-held)), nil
}

// reclaim takes back the leases that end before expired, as at now.
func reclaim(ctx context.Context, tx pgx.Tx, d store.CountDeltas, now, expired time.Time) ([]store.Reclaimed, error) {
	rows, err := tx.Query(ctx, reclaimSQL, now, expired)
	return collectReclaimed(d, rows, err)
}

// collectReclaimed reads reclaimSQL's rows. The jobs it ended are counted in
// d, as moved from running to the state it gave them.
func collectReclaimed(d store.CountDeltas, rows pgx.Rows, err error) ([]store.Reclaimed, error) {
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	defer rows.Close()
	var out []store.Reclaimed
	for rows.Next() {
		var r store.Reclaimed
		var typ string
		var state store.State
		if err := rows.Scan(&r.ID, &r.Attempt, &r.Owner, &r.Dead, &typ, &state); err != nil {
			return nil, fmt.Errorf("reclaim: %w", err)
		}
		d.Move(typ, store.StateRunning, state, 1)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	return out, nil
}

// presenceSQL records that a pool runs, the types it has handlers for and
// the versions it accepts of them.
const presenceSQL = `INSERT INTO pools (owner, types, pid, host, version, started_at, seen_at, versions, config_sha256, config_at)
VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9)
ON CONFLICT (owner) DO UPDATE SET types = excluded.types, versions = excluded.versions, seen_at = excluded.seen_at,
	config_sha256 = excluded.config_sha256, config_at = excluded.config_at`

const forgetPoolsSQL = `DELETE FROM pools WHERE seen_at < $1`

// queuePresence queues the statements of p in b: at the first, forget the
// pools not seen for PresenceKept; record this one.
func queuePresence(b *pgx.Batch, owner string, p *store.Presence, now time.Time) {
	if p.First {
		b.Queue(forgetPoolsSQL, ts(now.Add(-store.PresenceKept)))
	}
	types := p.Types
	if types == nil {
		types = []string{}
	}
	versions := p.Versions
	if versions == nil {
		versions = store.Versions{}
	}
	pr := p.Process
	var configAt *time.Time // NULL without a config
	if pr.Config != "" && !pr.ConfigAt.IsZero() {
		at := pr.ConfigAt.Truncate(time.Millisecond)
		configAt = &at
	}
	b.Queue(presenceSQL, owner, types, pr.PID, cleanText(pr.Host), cleanText(pr.Version), now, versions, cleanText(pr.Config), configAt)
}

// readPresence reads the results of queuePresence's statements.
func readPresence(br pgx.BatchResults, p *store.Presence) error {
	if p.First {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("forget old pools: %w", err)
		}
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("record pool: %w", err)
	}
	return nil
}

// claimSQL takes up to $4 ready jobs in claim order: of version 1 of the
// types $5, or of the (type, version) pairs given as the arrays $6 and $7.
// It walks jobs_ready, whose order is the claim order, and passes over the
// rows other transactions hold (SKIP LOCKED): pools on other nodes claiming
// at the same moment take the next jobs instead of waiting for each other,
// and never the same. A job of a version the pool does not accept is
// passed over and stays pending, as one of a type it has no handler for.
//
// A pool that runs version 1 alone of each type, the common case, claims
// with claimSQL, whose filter is the type list and version = 1: the
// version is one more column of the row that the walk of jobs_ready
// already fetches for the type, and the plan is the walk it was before
// jobs had versions. A pool that takes other versions of some type claims
// with claimVersionsSQL, whose filter adds the (type, version) pairs, only
// looked up (a hashed subplan) for a job of another version than 1.
var (
	claimSQL         = claimOf(false)
	claimVersionsSQL = claimOf(true)
)

func claimOf(versions bool) string {
	return `WITH c AS (
	SELECT id FROM jobs
	WHERE state = 'pending' AND run_at <= $3 AND ` + acceptedJobs(5, versions) + `
	ORDER BY priority DESC, run_at, id
	LIMIT $4
	FOR UPDATE SKIP LOCKED
)
UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = $1, lease_until = $2, started_at = $3, finished_at = NULL
FROM c WHERE jobs.id = c.id
RETURNING ` + jobColumnsOf
}

// acceptedJobs returns claimSQL's filter of the jobs a pool takes by type
// and version, shared with claimWindowSQL, nextWakeSQL and waitingSQL:
// version 1 of the types $first and, with versions, the pairs of the
// arrays $first+1 and $first+2 (see acceptedArgs).
func acceptedJobs(first int, versions bool) string {
	if !versions {
		return fmt.Sprintf(`type = ANY($%d) AND version = 1`, first)
	}
	return fmt.Sprintf(`(version = 1 AND type = ANY($%d)
		OR version <> 1 AND (type, version) IN (SELECT * FROM unnest($%d::text[], $%d::int[])))`, first, first+1, first+2)
}

// acceptedArgs returns the arguments of acceptedJobs's filter for the
// types plain at version 1 and pairs, and whether that filter is the one
// with versions: without pairs, the common case, it is not.
func acceptedArgs(plain []string, pairs []store.TypeVersion) (args []any, versions bool) {
	if plain == nil {
		plain = []string{}
	}
	if len(pairs) == 0 {
		return []any{plain}, false
	}
	types, vs := make([]string, len(pairs)), make([]int32, len(pairs))
	for i, p := range pairs {
		types[i], vs[i] = p.Type, int32(p.Version)
	}
	return []any{plain, types, vs}, true
}

// claimPlanSQL keeps the planner, for the rest of the trip's transaction,
// on the plan the claim is written for: walk jobs_ready in its order and
// stop after the rows it takes. Without it, on a jobs table that has not
// been analysed since a burst of enqueues (autovacuum analyses a minute
// later at best), the planner, which then knows nothing of the order of
// the rows on disk, prices the index walk's heap fetches as random reads
// and prefers to read every pending job (a bitmap scan) and sort them, at
// each claim: a drain of n jobs then costs n²/batch row reads, and drained
// 30,000 jobs at 1,200 jobs/s instead of 10,000. Both settings only price
// the other plans out; they forbid nothing, and last until the trip's
// transaction ends (set_config's is_local).
const claimPlanSQL = `SELECT set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true)`

// claimWindowSQL reads, in claim order, whether each of the next $2 jobs
// claimSQL would take is on its last attempt; claimWindowVersionsSQL the
// same of claimVersionsSQL.
var (
	claimWindowSQL         = claimWindowOf(false)
	claimWindowVersionsSQL = claimWindowOf(true)
)

func claimWindowOf(versions bool) string {
	return `SELECT attempt + 1 >= max_attempts FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND ` + acceptedJobs(3, versions) + `
ORDER BY priority DESC, run_at, id
LIMIT $2`
}

// unclaimSQL gives claimed jobs back as they were: same place in the claim
// order, attempt not spent.
const unclaimSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, attempt = attempt - 1
WHERE id = ANY($1) AND owner = $2 AND state = 'running'
RETURNING type`

// claim takes jobs for c. held reports that it gave back prefetched jobs
// from a job on its last attempt on (see store.Claim); rateWait is when a
// job that a rate limit held back may start (zero: none was).
func claim(ctx context.Context, tx querier, d store.CountDeltas, owner string, now time.Time, c *store.Claim) (jobs []*store.Job, held bool, rateWait time.Time, err error) {
	if c.N <= 0 {
		return nil, false, time.Time{}, nil
	}
	until := ts(now.Add(c.Lease))
	take := func(types []string, n int) error {
		accepted, versions := acceptedArgs(c.Versions.Split(types))
		q := claimSQL
		if versions {
			q = claimVersionsSQL
		}
		rows, err := tx.Query(ctx, q, append([]any{owner, until, now, n}, accepted...)...)
		js, err := collectClaimed(d, rows, err)
		if err != nil {
			return err
		}
		jobs = append(jobs, js...)
		return nil
	}
	n := c.N
	if len(c.Types) == 0 {
		n = 0
	}
	plain, pairs := c.Versions.Split(c.Types)
	if plain == nil {
		plain = []string{}
	}
	if n > 0 || len(c.Limited) > 0 || len(c.Rated) > 0 {
		if _, err := tx.Exec(ctx, claimPlanSQL); err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim: %w", err)
		}
	}
	if n > 0 && c.StopBeforeLast && c.Prefetch > 0 {
		if n, err = claimable(ctx, tx, now, plain, pairs, c.N, max(c.N-c.Prefetch, 0)); err != nil {
			return nil, false, time.Time{}, err
		}
	}
	if n > 0 {
		if err := take(c.Types, n); err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim: %w", err)
		}
	}
	limited := make([]string, 0, len(c.Limited))
	for t := range c.Limited {
		limited = append(limited, t)
	}
	sort.Strings(limited)
	for _, t := range limited {
		room := min(c.Limited[t], c.N-len(jobs))
		if room <= 0 {
			continue
		}
		if err := take([]string{t}, room); err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim %s: %w", t, err)
		}
	}
	if jobs, held, err = keepClaimed(ctx, tx, d, owner, c, jobs); err != nil {
		return nil, false, time.Time{}, err
	}
	jobs, rateWait, err = store.ClaimRated(jobs, c.Rated, c.N, func(r store.RatedClaim, room int) ([]*store.Job, time.Time, error) {
		return claimRated(ctx, tx, d, owner, until, now, r, room)
	})
	if err != nil {
		return nil, false, time.Time{}, err
	}
	return jobs, held, rateWait, nil
}

// collectClaimed reads claimSQL's rows. The jobs it took are counted in d,
// as moved from pending to running.
func collectClaimed(d store.CountDeltas, rows pgx.Rows, err error) ([]*store.Job, error) {
	js, err := collectJobs(rows, err)
	if err != nil {
		return nil, err
	}
	for _, j := range js {
		d.Move(j.Type, store.StatePending, store.StateRunning, 1)
	}
	return js, nil
}

// keepClaimed puts the jobs a claim took in claim order and gives back
// the prefetched ones from the first on its last attempt on; those are
// counted in d as moved back from running to pending.
func keepClaimed(ctx context.Context, tx querier, d store.CountDeltas, owner string, c *store.Claim, jobs []*store.Job) ([]*store.Job, bool, error) {
	store.SortClaimOrder(jobs)
	if cut := store.PrefetchCut(jobs, c.N, c.Prefetch); cut < len(jobs) {
		back := jobs[cut:]
		ids := make([]int64, len(back))
		for i, j := range back {
			ids[i] = j.ID
		}
		rows, err := tx.Query(ctx, unclaimSQL, ids, owner)
		if _, err := moveTypes(rows, err, d, store.StateRunning, store.StatePending); err != nil {
			return nil, false, fmt.Errorf("give back prefetched jobs: %w", err)
		}
		return jobs[:cut], true, nil
	}
	return jobs, false, nil
}

// claimable returns how many of the next n jobs of claimSQL to take so that
// none past the first keep is on its last attempt, nor after one that is.
func claimable(ctx context.Context, tx querier, now time.Time, plain []string, pairs []store.TypeVersion, n, keep int) (int, error) {
	accepted, versions := acceptedArgs(plain, pairs)
	q := claimWindowSQL
	if versions {
		q = claimWindowVersionsSQL
	}
	rows, err := tx.Query(ctx, q, append([]any{now, n}, accepted...)...)
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	last, err := pgx.CollectRows(rows, pgx.RowTo[bool])
	if err != nil {
		return 0, fmt.Errorf("claim: %w", err)
	}
	for i, l := range last {
		if l && i >= keep {
			return i, nil
		}
	}
	return n, nil
}

// nextWakeSQL finds when the next pending job that the pool takes ($2 to
// $4, as in claimSQL) becomes ready without an index of its own on run_at:
// it walks jobs_ready once per distinct priority (a skip-scan; there are
// few priorities), taking each one's earliest run_at. A job of a type or
// version the pool does not take must not wake it. nextWakeVersionsSQL is
// the same for a pool that takes other versions than 1 of some type.
var (
	nextWakeSQL         = nextWakeOf(false)
	nextWakeVersionsSQL = nextWakeOf(true)
)

func nextWakeOf(versions bool) string {
	return `WITH RECURSIVE p(pr) AS (
	(SELECT priority FROM jobs WHERE state = 'pending' ORDER BY priority DESC LIMIT 1)
	UNION ALL
	SELECT (SELECT priority FROM jobs WHERE state = 'pending' AND priority < p.pr ORDER BY priority DESC LIMIT 1)
	FROM p WHERE p.pr IS NOT NULL
)
SELECT
	(SELECT min((SELECT run_at FROM jobs WHERE state = 'pending' AND priority = p.pr AND ` + acceptedJobs(2, versions) + `
		ORDER BY priority DESC, run_at LIMIT 1))
	 FROM p WHERE p.pr IS NOT NULL),
	(SELECT min(lease_until) FROM jobs WHERE state = 'running' AND owner <> $1)`
}

// NextWake returns when the next pending job of one of types, of a version
// versions accepts, becomes ready and when the earliest lease held by an
// owner other than owner expires, as reclaim judges it (see store.Leases).
func (s *Store) NextWake(ctx context.Context, owner string, types []string, versions store.Versions) (ready, lease time.Time, err error) {
	accepted, withVersions := acceptedArgs(versions.Split(types))
	q := nextWakeSQL
	if withVersions {
		q = nextWakeVersionsSQL
	}
	now := ts(s.now())
	expired, err := s.expired(ctx, s.pool, now)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	var r, l *time.Time
	if err := s.pool.QueryRow(ctx, q, append([]any{owner}, accepted...)...).Scan(&r, &l); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	if l != nil {
		*l = l.Add(now.Sub(expired)) // when reclaim takes it
	}
	return fromTS(r), fromTS(l), nil
}

// CancelRequests returns the cancel requests on the jobs owner runs.
func (s *Store) CancelRequests(ctx context.Context, owner string) ([]store.CancelRequest, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, attempt, coalesce(cancelled_by, '') FROM jobs
WHERE owner = $1 AND state = 'running' AND cancel_requested_at IS NOT NULL`, owner)
	if err != nil {
		return nil, fmt.Errorf("cancel requests: %w", err)
	}
	defer rows.Close()
	var out []store.CancelRequest
	for rows.Next() {
		var r store.CancelRequest
		if err := rows.Scan(&r.ID, &r.Attempt, &r.By); err != nil {
			return nil, fmt.Errorf("cancel requests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Absent deletes owner's pool row: the pool stopped claiming.
func (s *Store) Leave(ctx context.Context, owner string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM pools WHERE owner = $1`, owner); err != nil {
		return fmt.Errorf("forget pool %s: %w", owner, err)
	}
	return nil
}
