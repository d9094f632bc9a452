package sqlite

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The compare-and-set of a schedule's cursor (see store.Base.Advance).
const (
	cursorSQL       = `SELECT at, paused FROM cursors WHERE schedule = ?`
	insertCursorSQL = `INSERT INTO cursors (schedule, at, updated_at) VALUES (?, ?, ?) ON CONFLICT (schedule) DO NOTHING`
	// moveCursorSQL moves a cursor still at the instant and pause read;
	// with ?5 it also resumes the schedule.
	moveCursorSQL = `UPDATE cursors SET at = ?2, updated_at = ?6,
	paused = CASE WHEN ?5 THEN 0 ELSE paused END,
	paused_at = CASE WHEN ?5 THEN NULL ELSE paused_at END
WHERE schedule = ?1 AND at = ?3 AND paused = ?4`
)

// bigBatchRows is the jobs of an AdvanceBatch past which its transactions
// commit without the writer's autocheckpoint (see Store.AdvanceBatch).
const bigBatchRows = 1000

// AdvanceBatch implements store.BeatProtocol.AdvanceBatch as store.Base
// does. A batch of many jobs commits with the writer's autocheckpoint off,
// and a passive checkpoint follows on the checkpoint connection in the
// background: on a file with a long history, a tick of many schedules
// writes a page of the key index and one of jobs_schedule_at per schedule,
// so its commits pass autocheckpointPages, and the one that did would
// copy every page back into the database before the beat went on.
func (s *Store) AdvanceBatch(ctx context.Context, advs []store.Advance) ([]store.AdvanceResult, error) {
	jobs := 0
	for _, a := range advs {
		jobs += len(a.Jobs)
	}
	if s.w == nil || jobs < bigBatchRows {
		return s.Base.AdvanceBatch(ctx, advs)
	}
	if _, err := s.w.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		return nil, fmt.Errorf("advance batch: %w", err)
	}
	res, err := s.Base.AdvanceBatch(ctx, advs)
	// The connection is reused: restore the default regardless.
	restore := "PRAGMA wal_autocheckpoint = " + strconv.Itoa(autocheckpointPages)
	if _, rerr := s.w.ExecContext(context.WithoutCancel(ctx), restore); rerr != nil && err == nil {
		err = fmt.Errorf("advance batch: %w", rerr)
	}
	s.checkpointBehind()
	return res, err
}

// casRows is how many cursors one moveCursorsSQL moves; a short group is
// padded with NULL rows, which match nothing.
const casRows = 100

// moveCursorsSQL is moveCursorSQL for up to casRows running schedules,
// returning those it moved.
var moveCursorsSQL = moveCursorsCountSQL + "\nRETURNING schedule"

// moveCursorsCountSQL is moveCursorsSQL without RETURNING, for the usual
// group where every cursor is as read, as the changed rows tell: a RETURNING
// stages each row in a temporary table for Go.
var moveCursorsCountSQL = `WITH c(name, from_at, to_at, was_paused) AS (VALUES ` +
	strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", casRows), ", ") + `)
UPDATE cursors SET at = c.to_at, updated_at = ? FROM c
WHERE cursors.schedule = c.name AND cursors.at = c.from_at AND cursors.paused = c.was_paused`

// A savepoint around moveCursorsCountSQL, undone when a cursor had moved.
const (
	casSavepointSQL  = "SAVEPOINT move_cursors"
	casRollbackToSQL = "ROLLBACK TO move_cursors"
	casReleaseSQL    = "RELEASE move_cursors"
)

// moveCursors compares and moves advs' cursors, casRows at a time.
func moveCursors(ctx context.Context, tx txn, advs []*store.Advance, now time.Time) (map[string]bool, error) {
	moved := make(map[string]bool, len(advs))
	for len(advs) > 0 {
		group := advs[:min(casRows, len(advs))]
		advs = advs[len(group):]
		if err := moveGroup(ctx, tx, group, now, moved); err != nil {
			return nil, err
		}
	}
	return moved, nil
}

// moveGroup moves group's cursors into moved: by moveCursorsCountSQL in a
// savepoint, undone if fewer rows changed than the group has, then by
// moveCursorsSQL, which names them (a moved cursor cannot tell which beat
// moved it).
func moveGroup(ctx context.Context, tx txn, group []*store.Advance, now time.Time, moved map[string]bool) error {
	args := make([]any, 0, 4*casRows+1)
	for _, a := range group {
		args = append(args, a.Schedule, ms(a.From), ms(a.To), a.Paused)
	}
	for range casRows - len(group) {
		args = append(args, nil, nil, nil, nil)
	}
	args = append(args, ms(now))
	if _, err := tx.exec(ctx, casSavepointSQL); err != nil {
		return err
	}
	n, err := affected(tx.exec(ctx, moveCursorsCountSQL, args...))
	if err != nil {
		return err
	}
	if n != int64(len(group)) {
		if _, err := tx.exec(ctx, casRollbackToSQL); err != nil {
			return err
		}
	}
	if _, err := tx.exec(ctx, casReleaseSQL); err != nil {
		return err
	}
	if n == int64(len(group)) {
		for _, a := range group {
			moved[a.Schedule] = true
		}
		return nil
	}
	return store.Read(wrap(tx.query(ctx, moveCursorsSQL, args...))).Each(func(r store.Row) (bool, error) {
		var name string
		err := r.Scan(&name)
		moved[name] = true
		return true, err
	})
}

const insertSkipSQL = `INSERT INTO skips (schedule, item, scheduled_at, reason, recorded_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT DO NOTHING`

func insertSkips(ctx context.Context, tx txn, skips []store.Skip, now time.Time) error {
	if len(skips) == 0 {
		return nil
	}
	st, err := tx.stmt(ctx, insertSkipSQL)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, s := range skips {
		if _, err := st.ExecContext(ctx, s.Schedule, s.Item, ms(s.ScheduledAt), s.Reason, ms(now)); err != nil {
			return fmt.Errorf("record skip: %w", err)
		}
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }
