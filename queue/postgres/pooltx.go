package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/scheduler-run/scheduler/queue/store"
)

// CommitPoolTx commits one transaction of a pool's loop: results, reclaim,
// heartbeat, presence and claim, in that order, all or nothing, then the
// changes they made to the job counts (see store.PoolTx).
//
// It makes as few round trips to the server as it can, because each is
// most of what a transaction costs. BEGIN and the statements whose
// arguments are known before it starts (all of them, but for a claim that
// stops before last attempts or takes limited types) go in one pipelined
// batch; what depends on their rows and changes jobs' states (such a
// claim, the prefetched jobs given back) follows, a statement at a time;
// then a second batch records the attempts of the results, writes the
// count changes, which the rows of every statement before it decided, and
// commits.
//
// The count write stays the last write before the commit, in the order of
// store.CountDeltas.Sorted, as in every other transaction of the store:
// the count rows are held only while the transaction commits, and two
// transactions never lock them in opposite orders.
func (s *Store) CommitPoolTx(ctx context.Context, t store.PoolTx) (store.PoolTxResult, error) {
	p := &poolTx{t: t, now: ts(t.Now), d: store.CountDeltas{}}
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
		// The commit was not reached, or failed: end the transaction, so
		// that the connection goes back to the pool. (Release destroys a
		// connection left in a transaction, when this fails too.)
		if conn.Conn().PgConn().TxStatus() != 'I' {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "rollback")
		}
		return store.PoolTxResult{}, err
	}
	if ready {
		store.Wake(s.Base)
	}
	return p.res, nil
}

// poolTx is one PoolTx under way on a connection.
type poolTx struct {
	t       store.PoolTx
	now     time.Time // t.Now, as stored
	expired time.Time // the reclaim's: see store.Leases
	fin     *finishing
	d       store.CountDeltas
	n       int          // jobs the first batch claims (see claimsInBatch)
	claimed []*store.Job // what it claimed
	res     store.PoolTxResult
}

// commit runs the transaction on conn and commits it. ready reports that
// it made jobs pending (a retry, a release, a reclaim) that pools on other
// nodes may take, and must hear of.
func (p *poolTx) commit(ctx context.Context, conn *pgxpool.Conn) (ready bool, err error) {
	if err := readBatch(conn.SendBatch(ctx, p.firstBatch()), p.readFirst); err != nil {
		return false, err
	}
	if err := p.claim(ctx, conn); err != nil {
		return false, err
	}
	if err := readBatch(conn.SendBatch(ctx, p.lastBatch()), p.readLast); err != nil {
		return false, err
	}
	return p.madeReady(), nil
}

// claimsInBatch returns how many jobs the first batch claims: all the
// claim asks for when it is of unlimited types alone and need not look at
// the jobs first; else none, and claim takes them after the batch.
func (p *poolTx) claimsInBatch() int {
	c := p.t.Claim
	if c == nil || len(c.Types) == 0 || c.N <= 0 || c.StopBeforeLast && c.Prefetch > 0 || len(c.Limited) > 0 || len(c.Rated) > 0 {
		return 0
	}
	return c.N
}

// firstBatch queues BEGIN and the statements whose arguments are known.
func (p *poolTx) firstBatch() *pgx.Batch {
	t := p.t
	b := &pgx.Batch{}
	b.Queue("begin")
	if p.fin != nil {
		b.Queue(finishSQL, p.fin.args...)
	}
	if t.Reclaim {
		b.Queue(reclaimSQL, p.now, ts(p.expired))
	}
	if !t.Heartbeat.IsZero() {
		b.Queue(heartbeatSQL, ts(t.Heartbeat), t.Owner)
	}
	if t.Presence != nil {
		queuePresence(b, t.Owner, t.Presence, p.now)
	}
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

// readFirst reads the results of firstBatch, in its order.
func (p *poolTx) readFirst(br pgx.BatchResults) error {
	t := p.t
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	var err error
	if p.fin != nil {
		rows, qerr := br.Query()
		if p.res.Fenced, err = p.fin.fenced(p.d, rows, qerr); err != nil {
			return err
		}
	}
	if t.Reclaim {
		rows, qerr := br.Query()
		if p.res.Reclaimed, err = collectReclaimed(p.d, store.Read(rows, qerr)); err != nil {
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

// claim keeps what the first batch claimed, or takes the claim's jobs
// now, a statement at a time.
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

// lastBatch queues the attempts to record, the count changes and COMMIT.
func (p *poolTx) lastBatch() *pgx.Batch {
	b := &pgx.Batch{}
	if p.fin != nil {
		p.fin.queueAttempts(b, p.res.Fenced)
	}
	queueCounts(b, p.d)
	b.Queue("commit")
	return b
}

// readLast reads the results of lastBatch, the commit's last.
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

// lastBatchLen is how many statements lastBatch queued.
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

// madeReady reports whether the transaction made jobs pending that pools
// on other nodes may take.
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
// failing the transaction, and every one after it, on the foreign key.
const insertAttemptsSQL = `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error, output)
SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::text[], $7::text[], $8::text[])
	AS a(job_id, attempt, worker, started_at, finished_at, outcome, error, output)
WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.id = a.job_id)`

type fence struct {
	id      int64
	attempt int
}

// finishing is the recording of a transaction's results: finishSQL's
// arguments, then, once its rows say which fences held, the attempts to
// record.
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
		// The fence's owner: the transaction's for a completion, the job's
		// as claimed for the other outcomes, as in the SQLite engine.
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

// fenced reads finishSQL's rows: for each result, whether its fence held.
// The jobs it ended are counted in d, as moved from running to the state
// it gave them.
func (f *finishing) fenced(d store.CountDeltas, rows pgx.Rows, err error) ([]bool, error) {
	held := map[fence]bool{}
	err = store.Read(rows, err).Each(func(r store.Row) (bool, error) {
		var fc fence
		var typ string
		var state store.State
		err := r.Scan(&fc.id, &fc.attempt, &typ, &state)
		held[fc] = true
		d.Move(typ, store.StateRunning, state, 1)
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

// queueAttempts queues in b the statement that records the attempts of the
// results (see store.AttemptRows), if there are any to record.
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

// capText caps an attempt's error or output text (see store.CapText) and
// makes it text PostgreSQL accepts (see cleanText).
func capText(s string) string { return cleanText(store.CapText(s)) }
