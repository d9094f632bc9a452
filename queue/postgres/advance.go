package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

const insertCursorSQL = `INSERT INTO cursors (schedule, at, updated_at) VALUES ($1, $2, $3) ON CONFLICT (schedule) DO NOTHING`

// moveCursorSQL is the compare-and-set of a cursor: it moves only if the
// cursor is still at the instant and in the pause state the caller read.
// Under concurrent moves PostgreSQL re-checks the condition on the row
// version the first mover committed, so exactly one of them wins. With
// $5 (resume) it also resumes the schedule.
const moveCursorSQL = `UPDATE cursors SET at = $2, updated_at = $6,
	paused = CASE WHEN $5 THEN false ELSE paused END,
	paused_at = CASE WHEN $5 THEN NULL ELSE paused_at END
WHERE schedule = $1 AND at = $3 AND paused = $4`

const cursorSQL = `SELECT at, paused FROM cursors WHERE schedule = $1`

// casCursor moves a's cursor from a.From to a.To inside tx, or creates it
// at a.To when a.From is zero, if the stored cursor is a.From with the
// pause state a.Paused; otherwise it writes nothing and returns
// ErrCursorMoved.
func casCursor(ctx context.Context, tx pgx.Tx, a store.Advance, now time.Time) error {
	if a.From.IsZero() {
		if a.Paused {
			return store.ErrCursorMoved
		}
		tag, err := tx.Exec(ctx, insertCursorSQL, a.Schedule, ts(a.To), now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrCursorMoved
		}
		return nil
	}
	tag, err := tx.Exec(ctx, moveCursorSQL, a.Schedule, ts(a.To), ts(a.From), a.Paused, a.Resume, now)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return lostCAS(ctx, tx, a)
}

// lostCAS tells why a's compare-and-set failed: ErrCursorMoved, or
// store.ErrPausedMoved when only the pause state differs from the one read.
func lostCAS(ctx context.Context, tx pgx.Tx, a store.Advance) error {
	var at time.Time
	var paused bool
	err := tx.QueryRow(ctx, cursorSQL, a.Schedule).Scan(&at, &paused)
	switch {
	case errNoRows(err):
		return store.ErrCursorMoved
	case err != nil:
		return fmt.Errorf("read cursor of %s: %w", a.Schedule, err)
	case !a.From.IsZero() && at.Equal(ts(a.From)) && paused != a.Paused:
		return store.ErrPausedMoved
	}
	return store.ErrCursorMoved
}

// Advance inserts a.Jobs (idempotently, by key) and a.Skips and moves the
// schedule's cursor from a.From to a.To, in one transaction.
func (s *Store) Advance(ctx context.Context, a store.Advance) ([]store.Enqueued, error) {
	if err := store.CheckAdvance(a); err != nil {
		return nil, err
	}
	now := ts(s.now())
	jobs, err := store.PrepareJobs(a.Jobs, now)
	if err != nil {
		return nil, fmt.Errorf("advance %s: %w", a.Schedule, err)
	}
	var res []store.Enqueued
	err = s.inTx(ctx, func(tx pgx.Tx, d store.CountDeltas) error {
		if err := casCursor(ctx, tx, a, now); err != nil {
			return err
		}
		if res, err = insertJobs(ctx, tx, d, jobs, now); err != nil {
			return err
		}
		return insertSkips(ctx, tx, a.Skips, now)
	})
	if err != nil {
		return nil, fmt.Errorf("advance %s: %w", a.Schedule, err)
	}
	if inserted(res) {
		s.wake()
	}
	return res, nil
}

// insertSkipsSQL records many skips in one statement.
const insertSkipsSQL = `INSERT INTO skips (schedule, item, scheduled_at, reason, recorded_at)
SELECT * , $5::timestamptz FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[])
ON CONFLICT DO NOTHING`

func insertSkips(ctx context.Context, tx pgx.Tx, skips []store.Skip, now time.Time) error {
	if len(skips) == 0 {
		return nil
	}
	scheds, items, ats, reasons := make([]string, len(skips)), make([]string, len(skips)), make([]time.Time, len(skips)), make([]string, len(skips))
	for i, sk := range skips {
		scheds[i], items[i], ats[i], reasons[i] = sk.Schedule, sk.Item, ts(sk.ScheduledAt), string(sk.Reason)
	}
	if _, err := tx.Exec(ctx, insertSkipsSQL, scheds, items, ats, reasons, now); err != nil {
		return fmt.Errorf("record skips: %w", err)
	}
	return nil
}

// lockCursorsSQL locks the existing cursors of an AdvanceBatch's
// transaction in the order of their names.
const lockCursorsSQL = `SELECT schedule FROM cursors WHERE schedule = ANY($1) ORDER BY schedule FOR UPDATE`

// moveCursorsSQL is moveCursorSQL for many running schedules at once; it
// returns the schedules it moved.
const moveCursorsSQL = `UPDATE cursors SET at = c.to_at, updated_at = $5
FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::bool[]) AS c(name, from_at, to_at, was_paused)
WHERE cursors.schedule = c.name AND cursors.at = c.from_at AND cursors.paused = c.was_paused
RETURNING cursors.schedule`

// AdvanceBatch commits many Advances in few transactions, each Advance
// still all or nothing with its own compare-and-set of the cursor (see
// store.Engine).
func (s *Store) AdvanceBatch(ctx context.Context, advs []store.Advance) ([]store.AdvanceResult, error) {
	now := ts(s.now())
	return store.BatchAdvances(advs, now, func(prepared []store.Advance, idx []int, res []store.AdvanceResult) error {
		return s.commitAdvances(ctx, prepared, idx, res, now)
	})
}

// commitAdvances commits advs[i] for i in idx in one transaction and, if it
// commits, sets their results in res: first every cursor's compare-and-set,
// then the jobs and skips of the winners, in the order of idx.
func (s *Store) commitAdvances(ctx context.Context, advs []store.Advance, idx []int, res []store.AdvanceResult, now time.Time) error {
	out := make([]store.AdvanceResult, len(idx))
	won := make([]bool, len(idx))
	insertedJobs := false
	err := s.inTx(ctx, func(tx pgx.Tx, d store.CountDeltas) error {
		clear(out)
		clear(won)
		// Every cursor is locked, then created or moved, in the order of
		// the schedules' names: two nodes advancing the same schedules wait
		// for each other instead of deadlocking.
		order := make([]int, len(idx)) // positions in idx, by name
		names := make([]string, len(idx))
		for k := range order {
			order[k] = k
		}
		sort.Slice(order, func(x, y int) bool { return advs[idx[order[x]]].Schedule < advs[idx[order[y]]].Schedule })
		for n, k := range order {
			names[n] = advs[idx[k]].Schedule
		}
		if _, err := tx.Exec(ctx, lockCursorsSQL, names); err != nil {
			return fmt.Errorf("lock cursors: %w", err)
		}
		// A running schedule's cursor moving on is the usual step: all of
		// them in one statement. A new cursor and a resume take Advance's.
		var usual []int // positions in idx
		for _, k := range order {
			a := advs[idx[k]]
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
		if len(usual) > 0 {
			names := make([]string, len(usual))
			froms, tos := make([]time.Time, len(usual)), make([]time.Time, len(usual))
			paused := make([]bool, len(usual))
			for n, k := range usual {
				a := advs[idx[k]]
				names[n], froms[n], tos[n], paused[n] = a.Schedule, ts(a.From), ts(a.To), a.Paused
			}
			rows, err := tx.Query(ctx, moveCursorsSQL, names, froms, tos, paused, now)
			if err != nil {
				return fmt.Errorf("move cursors: %w", err)
			}
			moved, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("move cursors: %w", err)
			}
			movedSet := make(map[string]bool, len(moved))
			for _, m := range moved {
				movedSet[m] = true
			}
			for _, k := range usual {
				a := advs[idx[k]]
				if movedSet[a.Schedule] {
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
		for k, i := range idx {
			if won[k] {
				jobs = append(jobs, advs[i].Jobs...)
				skips = append(skips, advs[i].Skips...)
			}
		}
		r, err := insertJobs(ctx, tx, d, jobs, now)
		if err != nil {
			return err
		}
		insertedJobs = inserted(r)
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
	if insertedJobs {
		s.wake()
	}
	return nil
}

const cursorsSQL = `SELECT schedule, at, paused, paused_at FROM cursors`

// cursorsByNameSQL sorts by the bytes of the names, whatever the
// database's collation.
const cursorsByNameSQL = cursorsSQL + ` ORDER BY schedule COLLATE "C"`

// Cursors returns every schedule's cursor, by schedule name.
func (s *Store) Cursors(ctx context.Context) (map[string]store.Cursor, error) {
	return store.CollectCursors(func(yield func(store.Cursor) bool) error {
		return s.eachCursor(ctx, cursorsSQL, yield)
	})
}

// CursorsByName calls yield with every schedule's cursor, in the byte order
// of the schedules' names, until yield returns false. It reads them all
// before the first yield, so that no connection of the pool is held while
// the caller works: a beat's commits need one of their own.
func (s *Store) CursorsByName(ctx context.Context, yield func(store.Cursor) bool) error {
	var cs []store.Cursor
	err := s.eachCursor(ctx, cursorsByNameSQL, func(c store.Cursor) bool {
		cs = append(cs, c)
		return true
	})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if !yield(c) {
			break
		}
	}
	return nil
}

// eachCursor calls yield with each cursor query reads, until yield returns
// false.
func (s *Store) eachCursor(ctx context.Context, query string, yield func(store.Cursor) bool) error {
	rows, err := s.pool.Query(ctx, query)
	if err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c store.Cursor
		var pausedAt *time.Time
		if err := rows.Scan(&c.Schedule, &c.At, &c.Paused, &pausedAt); err != nil {
			return fmt.Errorf("read cursors: %w", err)
		}
		c.At = c.At.UTC()
		c.PausedAt = fromTS(pausedAt)
		if !yield(c) {
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read cursors: %w", err)
	}
	return nil
}

const setPausedSQL = `INSERT INTO cursors (schedule, at, paused, paused_at, updated_at) VALUES ($1, $2, $3, $4, $2)
ON CONFLICT (schedule) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at, updated_at = excluded.updated_at`

// SetPaused pauses or resumes a schedule durably. A schedule without a
// cursor gets one at now.
func (s *Store) SetPaused(ctx context.Context, schedule string, paused bool) error {
	now := ts(s.now())
	var pausedAt any
	if paused {
		pausedAt = now
	}
	if _, err := s.pool.Exec(ctx, setPausedSQL, schedule, now, paused, pausedAt); err != nil {
		return fmt.Errorf("set paused %s: %w", schedule, err)
	}
	return nil
}
