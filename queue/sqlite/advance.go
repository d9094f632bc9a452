package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// casRows is how many cursors one moveCursorsSQL statement compares and
// moves; a shorter group is padded with rows of NULLs, which match nothing.
const casRows = 100

// moveCursorsSQL moves the cursors of up to casRows running schedules, each
// only if it is still at the instant and in the pause state the caller read
// (the compare-and-set of moveCursorSQL, row by row), and returns the
// schedules it moved.
var moveCursorsSQL = moveCursorsCountSQL + "\nRETURNING schedule"

// moveCursorsCountSQL is moveCursorsSQL without RETURNING, for the usual
// group in which every cursor is where its beat read it: the number of rows
// changed says so. RETURNING makes SQLite keep each returned row in a
// temporary table and hand it to Go; a tick of 10,000 schedules costs 4%
// fewer instructions without it.
var moveCursorsCountSQL = `WITH c(name, from_at, to_at, was_paused) AS (VALUES ` +
	strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", casRows), ", ") + `)
UPDATE cursors SET at = c.to_at, updated_at = ? FROM c
WHERE cursors.schedule = c.name AND cursors.at = c.from_at AND cursors.paused = c.was_paused`

// A savepoint around moveCursorsCountSQL, undone when a cursor of its group
// had moved, so that moveCursorsSQL can tell which.
const (
	casSavepointSQL  = "SAVEPOINT move_cursors"
	casRollbackToSQL = "ROLLBACK TO move_cursors"
	casReleaseSQL    = "RELEASE move_cursors"
)

// AdvanceBatch commits many Advances in few transactions, each Advance
// still all or nothing with its own compare-and-set of the cursor: an
// Advance whose schedule's cursor moved, or whose pause state changed,
// since it was read writes nothing and its result's Err wraps
// ErrCursorMoved, while the others in its transaction commit. Results are
// in the order of advs, one each.
//
// The Advances commit in the order of their schedules' names, in
// transactions of up to about 5,000 rows; each transaction is committed as
// Advance commits (fsynced only if one of its Advances resumes), so a crash
// loses a transaction's rows and cursor moves together. Once a transaction
// fails, it and the Advances after it in that order have that error as
// their Err and nothing of them is written.
//
// A schedule may appear once in advs. The error is non-nil, and nothing
// written, only for a call that could write nothing: a schedule twice, or
// a read-only queue.
func (s *Store) AdvanceBatch(ctx context.Context, advs []store.Advance) ([]store.AdvanceResult, error) {
	if s.w == nil {
		return nil, fmt.Errorf("advance batch: %w", errReadOnly)
	}
	now := s.clock.Now()
	return store.BatchAdvances(advs, now, func(prepared []store.Advance, idx []int, res []store.AdvanceResult) error {
		return s.commitAdvances(ctx, prepared, idx, res, now)
	})
}

// commitAdvances commits advs[i] for i in idx in one transaction and, if it
// commits, sets their results in res. It first settles every cursor's
// compare-and-set, then inserts the jobs and skips of the winners only, in
// the order of idx, the jobs of many schedules together in the multi-row
// statements of insertJobs.
func (s *Store) commitAdvances(ctx context.Context, advs []store.Advance, idx []int, res []store.AdvanceResult, now time.Time) error {
	durable := false
	for _, i := range idx {
		durable = durable || advs[i].Resume
	}
	out := make([]store.AdvanceResult, len(idx))
	won := make([]bool, len(idx))
	inserted := false
	err := s.inTx(ctx, durable, func(tx txn) error {
		clear(out)
		clear(won)
		// The usual step, a running schedule's cursor moving on, is
		// compared and moved casRows schedules per statement; a new cursor
		// and a resume take the statements of Advance.
		var usual []int // positions in idx
		for k, i := range idx {
			a := advs[i]
			if !a.From.IsZero() && !a.Resume {
				usual = append(usual, k)
				continue
			}
			err := casCursor(ctx, tx, a, now)
			switch {
			case errors.Is(err, store.ErrCursorMoved):
				out[k].Err = fmt.Errorf("advance %s: %w", a.Schedule, err)
			case err != nil:
				return err
			default:
				won[k] = true
			}
		}
		for len(usual) > 0 {
			group := usual[:min(casRows, len(usual))]
			usual = usual[len(group):]
			moved, err := moveCursors(ctx, tx, advs, idx, group, now)
			if err != nil {
				return err
			}
			for _, k := range group {
				a := advs[idx[k]]
				if moved[a.Schedule] {
					won[k] = true
					continue
				}
				lost := lostCAS(ctx, tx, a)
				if !errors.Is(lost, store.ErrCursorMoved) {
					return lost
				}
				out[k].Err = fmt.Errorf("advance %s: %w", a.Schedule, lost)
			}
		}
		var jobs []store.NewJob
		var skips []store.Skip
		nJobs, withJobs := 0, 0
		for k, i := range idx {
			if n := len(advs[i].Jobs); won[k] && n > 0 {
				nJobs += n
				withJobs++
			}
		}
		if withJobs > 1 {
			jobs = make([]store.NewJob, 0, nJobs)
		}
		for k, i := range idx {
			if !won[k] {
				continue
			}
			if withJobs == 1 && len(advs[i].Jobs) > 0 {
				// A fan-out of many items is one Advance: no copy of its jobs.
				jobs = advs[i].Jobs
			} else {
				jobs = append(jobs, advs[i].Jobs...)
			}
			skips = append(skips, advs[i].Skips...)
		}
		r, err := insertJobs(ctx, tx, jobs, now)
		if err != nil {
			return err
		}
		inserted = len(r) > 0
		for k, i := range idx {
			if n := len(advs[i].Jobs); won[k] && n > 0 {
				out[k].Jobs, r = r[:n:n], r[n:]
			}
		}
		return insertSkips(ctx, tx, skips, now)
	})
	if err != nil {
		return err
	}
	for k, i := range idx {
		res[i] = out[k]
	}
	if inserted {
		s.notify()
	}
	return nil
}

// moveCursors compares and moves the cursors of the Advances advs[idx[k]],
// k in group, and returns the schedules whose cursor it moved. It first
// moves them with moveCursorsCountSQL in a savepoint; if fewer rows
// changed than the group has schedules, it undoes that and runs
// moveCursorsSQL, which names the schedules it moved. (After the fact, a
// cursor at its new instant cannot tell whether this beat or another moved
// it there.)
func moveCursors(ctx context.Context, tx txn, advs []store.Advance, idx, group []int, now time.Time) (map[string]bool, error) {
	args := make([]any, 0, 4*casRows+1)
	for _, k := range group {
		a := advs[idx[k]]
		args = append(args, a.Schedule, ms(a.From), ms(a.To), a.Paused)
	}
	for range casRows - len(group) {
		args = append(args, nil, nil, nil, nil)
	}
	args = append(args, ms(now))
	if _, err := tx.exec(ctx, casSavepointSQL); err != nil {
		return nil, fmt.Errorf("move cursors: %w", err)
	}
	res, err := tx.exec(ctx, moveCursorsCountSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("move cursors: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("move cursors: %w", err)
	}
	if n != int64(len(group)) {
		if _, err := tx.exec(ctx, casRollbackToSQL); err != nil {
			return nil, fmt.Errorf("move cursors: %w", err)
		}
	}
	if _, err := tx.exec(ctx, casReleaseSQL); err != nil {
		return nil, fmt.Errorf("move cursors: %w", err)
	}
	if n == int64(len(group)) {
		moved := make(map[string]bool, len(group))
		for _, k := range group {
			moved[advs[idx[k]].Schedule] = true
		}
		return moved, nil
	}
	rows, err := tx.query(ctx, moveCursorsSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("move cursors: %w", err)
	}
	defer rows.Close()
	moved := make(map[string]bool, len(group))
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, fmt.Errorf("move cursors: %w", err)
		}
		moved[name] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("move cursors: %w", err)
	}
	return moved, nil
}

// lostCAS tells why moveCursorsSQL left a's cursor alone: ErrCursorMoved,
// or store.ErrPausedMoved when only the pause state differs from the one read.
// Any other error is a failed read.
func lostCAS(ctx context.Context, tx txn, a store.Advance) error {
	var at int64
	var paused bool
	err := tx.queryRow(ctx, cursorSQL, a.Schedule).Scan(&at, &paused)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrCursorMoved
	case err != nil:
		return fmt.Errorf("read cursor of %s: %w", a.Schedule, err)
	case at == ms(a.From) && paused != a.Paused:
		return store.ErrPausedMoved
	}
	return store.ErrCursorMoved
}
