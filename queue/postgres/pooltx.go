package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scheduler-run/scheduler/queue/store"
)

// CommitPoolTx implements store.PoolProtocol.CommitPoolTx in few round trips,
// most of a transaction's cost: BEGIN and every statement whose arguments are
// known go in one pipelined batch; what depends on their rows (a claim that
// looks first or takes limited types, prefetched jobs given back) follows one
// at a time; a second batch records attempts, writes the counts and commits.
// The count write comes last, in store.CountDeltas.Sorted order, so count
// rows are held only while committing and never locked in opposite orders.
func (s *Store) CommitPoolTx(ctx context.Context, t store.PoolTx) (store.PoolTxResult, error) {
	p := &poolTx{t: t, now: ts(t.Now), d: store.CountDeltas{}, f: store.FanInDeltas{}, base: s.Base}
	if len(t.Results) > 0 {
		var err error
		if p.fin, err = newFinishing(t.Owner, t.Results); err != nil {
			return store.PoolTxResult{}, err
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.PoolTxResult{}, fmt.Errorf("pool transaction: %w", err)
	}
	defer conn.Release()
	if t.Reclaim {
		if p.expired, err = store.Expired(ctx, s.Base, txn{q: conn}, p.now); err != nil {
			return store.PoolTxResult{}, fmt.Errorf("pool transaction: reclaim: %w", err)
		}
	}
	ready, err := p.commit(ctx, conn)
	if err != nil {
		// End the transaction so the connection returns to the pool.
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "rollback")
		}
		return store.PoolTxResult{}, err
	}
	if ready || p.fired {
		store.Wake(s.Base)
	}
	return p.res, nil
}

type poolTx struct {
	t       store.PoolTx
	now     time.Time // t.Now, as stored
	expired time.Time // the reclaim's: see store.Leases
	fin     *finishing
	d       store.CountDeltas
	f       store.FanInDeltas // moves of fan-in members
	fired   bool              // a fan-in's job was enqueued
	base    *store.Base
	n       int          // jobs the first batch claims (see claimsInBatch)
	claimed []*store.Job // what it claimed
	res     store.PoolTxResult
}

// commit runs and commits the transaction on conn. ready reports jobs made
// pending (retry, release, reclaim) other nodes must hear of.
func (p *poolTx) commit(ctx context.Context, conn *pgxpool.Conn) (ready bool, err error) {
	if err := readBatch(conn.SendBatch(ctx, p.firstBatch()), p.readFirst); err != nil {
		return false, err
	}
	if err := p.claim(ctx, conn); err != nil {
		return false, err
	}
	// Members' ends settle their fan-ins in this transaction; jobs of no
	// fan-in leave f empty and cost no round trip.
	if len(p.f) > 0 {
		if p.fired, err = store.SettleFanIns(ctx, p.base, txn{q: conn, counts: p.d}, p.f, p.now); err != nil {
			return false, err
		}
	}
	if err := readBatch(conn.SendBatch(ctx, p.lastBatch()), p.readLast); err != nil {
		return false, err
	}
	return p.madeReady(), nil
}

// claimsInBatch returns how many jobs the first batch claims: all, for
// unlimited types that need no look first; else none.
func (p *poolTx) claimsInBatch() int {
	c := p.t.Claim
	if c == nil || len(c.Types) == 0 || c.N <= 0 || c.StopBeforeLast && c.Prefetch > 0 || len(c.Limited) > 0 || len(c.Rated) > 0 {
		return 0
	}
	return c.N
}

func (p *poolTx) firstBatch() *pgx.Batch {
	t := p.t
	b := &pgx.Batch{}
	b.Queue("begin")
	if p.fin != nil {
		b.Queue(finishSQL, p.fin.args...)
	}
	queueEndLive(b, t.LiveEnded)
	if t.Reclaim {
		b.Queue(reclaimSQL, p.now, ts(p.expired))
	}
	if !t.Heartbeat.IsZero() {
		b.Queue(heartbeatSQL, ts(t.Heartbeat), t.Owner)
	}
	if t.Presence != nil {
		queuePresence(b, t.Owner, t.Presence, p.now)
	}
	queueStoreLive(b, t.Owner, t.Live, p.now)
	if p.n = p.claimsInBatch(); p.n > 0 {
		c := t.Claim
		b.Queue(claimPlanSQL)
		accepted, versions := acceptedArgs(c.Versions.Split(c.Types))
		q := claimSQL
		if versions {
			q = claimVersionsSQL
		}
		b.Queue(q, append([]any{t.Owner, ts(p.now.Add(c.Lease)), p.now, p.n}, accepted...)...)
	}
	return b
}

func (p *poolTx) readFirst(br pgx.BatchResults) error {
	t := p.t
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	var err error
	if p.fin != nil {
		rows, qerr := br.Query()
		if p.res.Fenced, err = p.fin.fenced(p.d, p.f, rows, qerr); err != nil {
			return err
		}
	}
	if len(t.LiveEnded) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("delete live output: %w", err)
		}
	}
	if t.Reclaim {
		rows, qerr := br.Query()
		if p.res.Reclaimed, err = collectReclaimed(p.d, p.f, store.Read(rows, qerr)); err != nil {
			return fmt.Errorf("reclaim: %w", err)
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
	if len(t.Live) > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("store live output: %w", err)
		}
	}
	if p.n > 0 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		rows, qerr := br.Query()
		if p.claimed, err = collectClaimed(p.d, rows, qerr); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
	}
	return nil
}

// claim keeps what the first batch claimed, or claims now.
func (p *poolTx) claim(ctx context.Context, conn *pgxpool.Conn) error {
	c := p.t.Claim
	if c == nil {
		return nil
	}
	cl := newClaimer(conn, p.d, p.t.Owner, p.now, c.Lease)
	var err error
	if p.n > 0 {
		p.res.Claimed, p.res.GaveBack, err = store.KeepClaimed(ctx, cl, p.claimed, c.N, c.Prefetch)
		return err
	}
	p.res.Claimed, p.res.GaveBack, p.res.RateWait, err = store.ClaimJobs(ctx, cl, c, p.now)
	return err
}

func (p *poolTx) lastBatch() *pgx.Batch {
	b := &pgx.Batch{}
	if p.fin != nil {
		p.fin.queueAttempts(b, p.res.Fenced)
	}
	queueCounts(b, p.d)
	b.Queue("commit")
	return b
}

func (p *poolTx) readLast(br pgx.BatchResults) error {
	for range p.lastBatchLen() - 1 {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("record attempts and counts: %w", err)
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
}

func (p *poolTx) lastBatchLen() int {
	n := 1
	if p.fin != nil && p.fin.attempts {
		n++
	}
	if p.d.Changed() {
		n++
	}
	return n
}

// madeReady reports whether the transaction made jobs pending.
func (p *poolTx) madeReady() bool {
	if len(p.res.Reclaimed) > 0 {
		return true
	}
	for i, r := range p.t.Results {
		if p.res.Fenced[i] && (r.Outcome == store.OutcomeReleased || r.Outcome == store.OutcomeRetry) {
			return true
		}
	}
	return false
}

// readBatch reads a batch's results with read, then closes it.
func readBatch(br pgx.BatchResults, read func(pgx.BatchResults) error) error {
	err := read(br)
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

const heartbeatSQL = `UPDATE jobs SET lease_until = $1 WHERE owner = $2 AND state = 'running'`

// finishSQL records many attempts' ends, fenced on (id, owner, attempt,
// running), and returns the results whose fence held. Per outcome it writes
// what SQLite's statements write:
//
//	done       state done, owner the worker (the row records the attempt), last_error '', finished_at
//	retry      pending at retry_at, with the error
//	dead       dead, finished_at, with the error
//	released   pending now, the attempt given back (attempt - 1)
//	cancelled  cancelled, finished_at, with the error
//
// A retry or release of a job with a cancel request ends it cancelled.
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
RETURNING r.id, r.attempt, jobs.type, jobs.state, jobs.fanin_id`

// insertAttemptsSQL records many attempts. A stale result's job may be purged
// since: its attempt is dropped rather than fail every later transaction on
// the foreign key.
const insertAttemptsSQL = `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error, output)
SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::text[], $8::text[])
	AS a(job_id, attempt, worker, started_at, finished_at, outcome, error, output)
WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.id = a.job_id)`

type fence struct {
	id      int64
	attempt int
}

// finishing holds finishSQL's arguments and, once the fences are known, the
// attempts to record.
type finishing struct {
	rs       []store.Result
	args     []any // of finishSQL
	attempts bool  // queueAttempts queued the statement
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
		// The fence's owner: the pool's for a completion, the job's
		// otherwise, as on SQLite.
		owners[i] = r.Job.Owner
		if r.Outcome == store.OutcomeDone {
			owners[i] = owner
		}
		ids[i], attempts[i], outcomes[i] = r.Job.ID, int32(r.Job.Attempt), string(r.Outcome)
		workers[i], errs[i] = cleanText(r.Worker), capText(r.Error)
		finished[i], retryAt[i] = ts(r.Finished), ts(r.RetryAt)
	}
	return &finishing{rs: rs,
		args: []any{owners, ts(rs[n-1].Finished), ids, attempts, outcomes, finished, workers, errs, retryAt}}, nil
}

// fenced reads finishSQL's rows, whether each fence held, counting in d
// and the fan-in members' moves in fi.
func (f *finishing) fenced(d store.CountDeltas, fi store.FanInDeltas, rows pgx.Rows, err error) ([]bool, error) {
	held := map[fence]bool{}
	err = store.Read(rows, err).Each(func(r store.Row) (bool, error) {
		var fc fence
		var typ string
		var state store.State
		var fanIn *int64
		err := r.Scan(&fc.id, &fc.attempt, &typ, &state, &fanIn)
		held[fc] = true
		d.Move(typ, store.StateRunning, state, 1)
		if fanIn != nil {
			fi.Move(*fanIn, store.StateRunning, state)
		}
		return true, err
	})
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	ok := make([]bool, len(f.rs))
	for i, r := range f.rs {
		ok[i] = held[fence{r.Job.ID, r.Job.Attempt}]
	}
	return ok, nil
}

// queueAttempts queues the results' attempts (store.AttemptRows), if any.
func (f *finishing) queueAttempts(b *pgx.Batch, ok []bool) {
	as := store.AttemptRows(f.rs, ok)
	if len(as) == 0 {
		return
	}
	n := len(as)
	ids, nums := make([]int64, n), make([]int32, n)
	workers, outcomes, errs, outputs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	started, finished := make([]time.Time, n), make([]time.Time, n)
	for i, a := range as {
		ids[i], nums[i], workers[i], outcomes[i] = a.JobID, int32(a.Number), cleanText(a.Worker), string(a.Outcome)
		errs[i], outputs[i], started[i], finished[i] = capText(a.Error), capText(a.Output), ts(a.StartedAt), ts(a.FinishedAt)
	}
	b.Queue(insertAttemptsSQL, ids, nums, workers, started, finished, outcomes, errs, outputs)
	f.attempts = true
}

// capText caps an attempt's text (store.CapText) for PostgreSQL.
func capText(s string) string { return cleanText(store.CapText(s)) }
