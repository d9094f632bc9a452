package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// CommitPoolTx implements store.PoolProtocol.CommitPoolTx.
func (s *Store) CommitPoolTx(ctx context.Context, t store.PoolTx) (store.PoolTxResult, error) {
	var res store.PoolTxResult
	fired := false
	err := s.inTx(ctx, false, func(tx txn) error {
		res, fired = store.PoolTxResult{}, false
		f := store.FanInDeltas{}
		var err error
		if res.Fenced, err = finish(ctx, tx, t.Owner, t.Results, f); err != nil {
			return err
		}
		if err := endLive(ctx, tx, t.LiveEnded); err != nil {
			return err
		}
		if t.Reclaim {
			if res.Reclaimed, err = s.reclaimExpired(ctx, tx, t.Now, f); err != nil {
				return err
			}
		}
		// Members' ends settle their fan-ins in the transaction that
		// records them; jobs of no fan-in leave f empty.
		if len(f) > 0 {
			if fired, err = store.SettleFanIns(ctx, s.Base, tx, f, t.Now); err != nil {
				return err
			}
		}
		if !t.Heartbeat.IsZero() {
			if _, err := tx.exec(ctx, heartbeatSQL, ms(t.Heartbeat), t.Owner); err != nil {
				return fmt.Errorf("heartbeat: %w", err)
			}
		}
		if p := t.Presence; p != nil {
			if err := s.present(ctx, tx, t.Owner, p, t.Now); err != nil {
				return err
			}
		}
		if err := storeLive(ctx, tx, t.Owner, t.Live, t.Now); err != nil {
			return err
		}
		if t.Claim != nil {
			c := claimer{tx: tx, s: s, owner: t.Owner, now: t.Now, until: t.Now.Add(t.Claim.Lease)}
			res.Claimed, res.GaveBack, res.RateWait, err = store.ClaimJobs(ctx, c, t.Claim, t.Now)
		}
		return err
	})
	if err != nil {
		return store.PoolTxResult{}, err
	}
	if fired {
		store.Wake(s.Base)
	}
	return res, nil
}

const heartbeatSQL = `UPDATE jobs SET lease_until = ? WHERE owner = ? AND state = 'running'`

// The outcome statements are fenced on (id, owner, attempt, running), so a
// worker whose lease was reclaimed changes nothing.
const (
	finishRetrySQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, run_at = ?, last_error = ?
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`
	finishDeadSQL = `UPDATE jobs SET state = 'dead', owner = NULL, lease_until = NULL, finished_at = ?, last_error = ?
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`
	// A released attempt, cut by shutdown, does not count.
	finishReleasedSQL = `UPDATE jobs SET state = 'pending', owner = NULL, lease_until = NULL, run_at = ?, attempt = attempt - 1
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`
	finishCancelledSQL = `UPDATE jobs SET state = 'cancelled', owner = NULL, lease_until = NULL, finished_at = ?, last_error = ?
WHERE id = ? AND owner = ? AND attempt = ? AND state = 'running'`
)

// settleCancelledSQL ends cancelled the jobs a retry or release made pending
// after a cancel request: a cancelled job never runs again.
const settleCancelledSQL = `UPDATE jobs SET state = 'cancelled', finished_at = ?1
WHERE id IN (SELECT value FROM json_each(?2)) AND state = 'pending' AND cancel_requested_at IS NOT NULL
RETURNING type, fanin_id`

// finishDonePrefix starts the statements that complete a group of jobs:
//
//	WITH d(id, attempt, finished, worker) AS (VALUES (?, ?, ?, ?), ...)
//	UPDATE jobs SET state = 'done', owner = d.worker, ... FROM d
//	WHERE jobs.id = d.id AND jobs.attempt = d.attempt AND jobs.owner = ? AND jobs.state = 'running'
//
// fenced like the others, with anonymous parameters (the driver looks up each
// named one). A done job keeps its worker in owner, so its row records the
// successful attempt and a completion writes one row.
const finishDonePrefix = "WITH d(id, attempt, finished, worker) AS (VALUES "

// finishDoneRows are the completion statements' group sizes, largest first,
// the last padded with NULL rows; each size is prepared once.
var finishDoneRows = []int{128, 32, 8, 1}

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

// doneHeldSQL tells whether a completion took effect, asked when a group
// changed fewer rows than it carried.
const doneHeldSQL = `SELECT count(*) FROM jobs WHERE id = ? AND attempt = ? AND owner = ? AND state = 'done'`

// insertAttemptsSQL records many attempts in one statement. A stale result's
// job may be purged since: its attempt is dropped rather than fail every
// later transaction of the pool on the foreign key.
const insertAttemptsSQL = `INSERT INTO attempts (job_id, attempt, worker, started_at, finished_at, outcome, error, output)
SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, value->>7 FROM json_each(?)
WHERE EXISTS (SELECT 1 FROM jobs WHERE jobs.id = value->>0)`

// finish records results in tx and returns whether each fence held; a lost
// lease records a stale attempt. Completions go one statement per group, with
// an attempt row only for output.
func finish(ctx context.Context, tx txn, owner string, rs []store.Result, f store.FanInDeltas) ([]bool, error) {
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
		if r.Outcome == store.OutcomeDone {
			continue
		}
		var err error
		if ok[i], err = finishOther(ctx, tx, r); err != nil {
			return nil, err
		}
	}
	for i, r := range rs {
		if ok[i] && r.Job.FanInID != 0 {
			f.Move(r.Job.FanInID, store.StateRunning, outcomeState(r.Outcome))
		}
	}
	if err := settleCancelled(ctx, tx, rs, ok, rs[len(rs)-1].Finished, f); err != nil {
		return nil, err
	}
	attempts := store.AttemptRows(rs, ok)
	if len(attempts) == 0 {
		return ok, nil
	}
	rows := make([][8]any, len(attempts))
	for i, a := range attempts {
		rows[i] = [8]any{a.JobID, a.Number, a.Worker, ms(a.StartedAt), ms(a.FinishedAt), a.Outcome, a.Error, a.Output}
	}
	arg, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	if _, err := tx.exec(ctx, insertAttemptsSQL, string(arg)); err != nil {
		return nil, fmt.Errorf("record attempts: %w", err)
	}
	return ok, nil
}

// finishOther records r, not done, and reports whether its fence held.
func finishOther(ctx context.Context, tx txn, r store.Result) (bool, error) {
	j := r.Job
	var q string
	var args []any
	to := store.StatePending
	switch r.Outcome {
	case store.OutcomeRetry:
		q, args = finishRetrySQL, []any{ms(r.RetryAt), store.CapText(r.Error), j.ID, j.Owner, j.Attempt}
	case store.OutcomeDead:
		q, args, to = finishDeadSQL, []any{ms(r.Finished), store.CapText(r.Error), j.ID, j.Owner, j.Attempt}, store.StateDead
	case store.OutcomeReleased:
		q, args = finishReleasedSQL, []any{ms(r.Finished), j.ID, j.Owner, j.Attempt}
	case store.OutcomeCancelled:
		q, args, to = finishCancelledSQL, []any{ms(r.Finished), store.CapText(r.Error), j.ID, j.Owner, j.Attempt}, store.StateCancelled
	default:
		return false, fmt.Errorf("finish job %d: unexpected outcome %q", j.ID, r.Outcome)
	}
	n, err := affected(tx.exec(ctx, q, args...))
	if err != nil {
		return false, fmt.Errorf("finish job %d: %w", j.ID, err)
	}
	tx.counts.Move(j.Type, store.StateRunning, to, n)
	return n == 1, nil
}

// finishDone completes rs[i], i in done, in groups, setting ok[i] where the
// fence held.
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
		n, err := affected(tx.exec(ctx, finishDoneSQL(size), args...))
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
		if err := doneHeld(ctx, tx, rs, group, ok); err != nil {
			return err
		}
	}
	return nil
}

// doneHeld asks which completions of a short group took effect.
func doneHeld(ctx context.Context, tx txn, rs []store.Result, group []int, ok []bool) error {
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
	return nil
}

// settleCancelled applies settleCancelledSQL to the results made pending.
func settleCancelled(ctx context.Context, tx txn, rs []store.Result, ok []bool, now time.Time, f store.FanInDeltas) error {
	var ids []int64
	for i, r := range rs {
		if ok[i] && (r.Outcome == store.OutcomeRetry || r.Outcome == store.OutcomeReleased) {
			ids = append(ids, r.Job.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := store.MoveTypesFanIns(store.Read(wrap(tx.query(ctx, settleCancelledSQL, ms(now), idsText(ids)))), tx.counts, f, store.StatePending, store.StateCancelled)
	if err != nil {
		return fmt.Errorf("settle cancelled jobs: %w", err)
	}
	return nil
}

// outcomeState is the state a fenced result of outcome o leaves its job in,
// before settleCancelled.
func outcomeState(o store.Outcome) store.State {
	switch o {
	case store.OutcomeDone:
		return store.StateDone
	case store.OutcomeDead:
		return store.StateDead
	case store.OutcomeCancelled:
		return store.StateCancelled
	}
	return store.StatePending
}
