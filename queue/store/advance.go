package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The beat's writes, on every engine.

// Advance implements BeatProtocol.Advance. The pause is part of the
// compare-and-set, so a beat that read before a pause commits nothing after
// it. Only a resume, which a person awaits, is durable: a lost commit rolls
// back rows and cursor together, and they are materialised again under the
// same keys.
func (e *Base) Advance(ctx context.Context, a Advance) ([]Enqueued, error) {
	if err := CheckAdvance(a); err != nil {
		return nil, err
	}
	now := e.clock.Now()
	jobs, err := PrepareJobs(a.Jobs, now)
	if err != nil {
		return nil, fmt.Errorf("advance %s: %w", a.Schedule, err)
	}
	var res []Enqueued
	err = e.b.InTx(ctx, a.Resume, func(tx Tx) error {
		if err := e.casCursor(ctx, tx, a, now); err != nil {
			return err
		}
		if res, err = e.b.InsertJobs(ctx, tx, jobs, now); err != nil {
			return err
		}
		if err := e.insertFanIns(ctx, tx, a, res, now); err != nil {
			return err
		}
		return e.b.InsertSkips(ctx, tx, a.Skips, now)
	})
	if err != nil {
		return nil, fmt.Errorf("advance %s: %w", a.Schedule, err)
	}
	if Inserted(res) {
		Wake(e)
	}
	return res, nil
}

// casCursor moves a's cursor from a.From to a.To, or creates it at a.To for a
// zero a.From, if it is a.From with pause a.Paused; else it writes nothing
// and returns ErrCursorMoved.
func (e *Base) casCursor(ctx context.Context, tx Tx, a Advance, now time.Time) error {
	if a.From.IsZero() {
		if a.Paused {
			return ErrCursorMoved
		}
		n, err := tx.Exec(ctx, e.q.InsertCursor, a.Schedule, a.To, now)
		if err != nil || n == 1 {
			return err
		}
		return ErrCursorMoved
	}
	n, err := tx.Exec(ctx, e.q.MoveCursor, a.Schedule, a.To, a.From, a.Paused, a.Resume, now)
	if err != nil || n == 1 {
		return err
	}
	return e.lostCAS(ctx, tx, a)
}

// lostCAS tells why a's compare-and-set failed: ErrCursorMoved, or
// ErrPausedMoved when only the pause differs.
func (e *Base) lostCAS(ctx context.Context, tx Tx, a Advance) error {
	var at Time
	var paused bool
	err := tx.QueryRow(ctx, e.q.Cursor, a.Schedule).Scan(&at, &paused)
	switch {
	case errors.Is(err, ErrNoRows):
		return ErrCursorMoved
	case err != nil:
		return fmt.Errorf("read cursor of %s: %w", a.Schedule, err)
	case at.Equal(a.From.Truncate(time.Millisecond)) && paused != a.Paused:
		return ErrPausedMoved
	}
	return ErrCursorMoved
}

// AdvanceBatch implements BeatProtocol.AdvanceBatch: a failed compare-and-set
// writes nothing of its Advance, its Err wrapping ErrCursorMoved, while the
// others commit. Advances commit by schedule name, in transactions of up to
// AdvanceBatchRows rows, each as durable as Advance's, so a crash loses rows
// and cursor moves together. Once a transaction fails, it and the later
// Advances get its error. The call fails only for a schedule named twice.
func (e *Base) AdvanceBatch(ctx context.Context, advs []Advance) ([]AdvanceResult, error) {
	now := e.clock.Now()
	return BatchAdvances(advs, now, func(prepared []Advance, idx []int, res []AdvanceResult) error {
		return e.commitAdvances(ctx, prepared, idx, res, now)
	})
}

// commitAdvances commits advs[i], for i in idx, in one transaction and sets
// their results in res: every cursor first, then the winners' jobs and skips
// together.
func (e *Base) commitAdvances(ctx context.Context, advs []Advance, idx []int, res []AdvanceResult, now time.Time) error {
	durable := false
	names := make([]string, len(idx))
	for k, i := range idx {
		durable = durable || advs[i].Resume
		names[k] = advs[i].Schedule
	}
	out := make([]AdvanceResult, len(idx))
	won := make([]bool, len(idx))
	inserted := false
	err := e.b.InTx(ctx, durable, func(tx Tx) error {
		clear(out)
		clear(won)
		if err := e.b.LockCursors(ctx, tx, names); err != nil {
			return fmt.Errorf("lock cursors: %w", err)
		}
		if err := e.settleCursors(ctx, tx, advs, idx, out, won, now); err != nil {
			return err
		}
		r, err := e.b.InsertJobs(ctx, tx, winnersJobs(advs, idx, won), now)
		if err != nil {
			return err
		}
		inserted = Inserted(r)
		for k, i := range idx {
			if n := len(advs[i].Jobs); won[k] && n > 0 {
				out[k].Jobs, r = r[:n:n], r[n:]
			}
			if won[k] {
				if err := e.insertFanIns(ctx, tx, advs[i], out[k].Jobs, now); err != nil {
					return err
				}
			}
		}
		var skips []Skip
		for k, i := range idx {
			if won[k] {
				skips = append(skips, advs[i].Skips...)
			}
		}
		return e.b.InsertSkips(ctx, tx, skips, now)
	})
	if err != nil {
		return err
	}
	for k, i := range idx {
		res[i] = out[k]
	}
	if inserted {
		Wake(e)
	}
	return nil
}

// settleCursors compares and moves advs[idx[k]]'s cursors, setting won[k] or
// out[k].Err. Running schedules moving on go to the engine's MoveCursors,
// many at once; a new cursor or a resume to casCursor.
func (e *Base) settleCursors(ctx context.Context, tx Tx, advs []Advance, idx []int, out []AdvanceResult, won []bool, now time.Time) error {
	var usual []int // positions in idx
	for k, i := range idx {
		a := advs[i]
		if !a.From.IsZero() && !a.Resume {
			usual = append(usual, k)
			continue
		}
		err := e.casCursor(ctx, tx, a, now)
		switch {
		case errors.Is(err, ErrCursorMoved):
			out[k].Err = fmt.Errorf("advance %s: %w", a.Schedule, err)
		case err != nil:
			return err
		default:
			won[k] = true
		}
	}
	if len(usual) == 0 {
		return nil
	}
	batch := make([]*Advance, len(usual))
	for n, k := range usual {
		batch[n] = &advs[idx[k]]
	}
	moved, err := e.b.MoveCursors(ctx, tx, batch, now)
	if err != nil {
		return fmt.Errorf("move cursors: %w", err)
	}
	for _, k := range usual {
		a := advs[idx[k]]
		if moved[a.Schedule] {
			won[k] = true
			continue
		}
		lost := e.lostCAS(ctx, tx, a)
		if !errors.Is(lost, ErrCursorMoved) {
			return lost
		}
		out[k].Err = fmt.Errorf("advance %s: %w", a.Schedule, lost)
	}
	return nil
}

// winnersJobs returns the winners' jobs in order, not copying a lone winner's
// (a large fan-out).
func winnersJobs(advs []Advance, idx []int, won []bool) []NewJob {
	n, with, last := 0, 0, -1
	for k, i := range idx {
		if won[k] && len(advs[i].Jobs) > 0 {
			n += len(advs[i].Jobs)
			with, last = with+1, i
		}
	}
	if with == 1 {
		return advs[last].Jobs
	}
	jobs := make([]NewJob, 0, n)
	for k, i := range idx {
		if won[k] {
			jobs = append(jobs, advs[i].Jobs...)
		}
	}
	return jobs
}
