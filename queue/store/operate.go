package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The operator's writes, on every engine. Each is acknowledged to someone, so
// its commit is durable.

// Retry implements Operator.Retry.
func (e *Base) Retry(ctx context.Context, id int64) error {
	if id <= 0 {
		return fmt.Errorf("retry job %d: %w", id, ErrNotFound)
	}
	n, err := e.retry(ctx, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("retry job %d: no dead or discarded job with that id: %w", id, ErrNotFound)
	}
	return nil
}

// RetryAllDead implements Operator.RetryAllDead.
func (e *Base) RetryAllDead(ctx context.Context) (int64, error) { return e.retry(ctx, 0) }

// retry revives the dead job id, or all for id 0, with as many fresh attempts
// as at first. Spent attempts stay counted, so the history stays in order and
// an old attempt's late result stays fenced off. A job named by id may also
// be discarded: an operator takes back the discard.
func (e *Base) retry(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		query, from := e.q.Retry, StateDead
		if id > 0 {
			var st State
			if err := tx.QueryRow(ctx, e.q.CancelState, id).Scan(&st); err != nil {
				if errors.Is(err, ErrNoRows) {
					return nil
				}
				return err
			}
			if st == StateDiscarded {
				query, from = e.q.RetryDiscarded, StateDiscarded
			}
		}
		now := e.clock.Now()
		f := FanInDeltas{}
		var err error
		if n, err = MoveTypesFanIns(Read(tx.Query(ctx, query, now, id)), tx.Counts(), f, from, StatePending); err != nil {
			return err
		}
		_, err = SettleFanIns(ctx, e, tx, f, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("retry dead jobs: %w", err)
	}
	if n > 0 {
		Wake(e)
	}
	return n, nil
}

// Discard implements Operator.Discard, in one transaction: a discard and a
// retry of the same job are one after the other, and the second finds the
// job no longer dead.
func (e *Base) Discard(ctx context.Context, d Discard) (Discarded, error) {
	var out Discarded
	if len(d.IDs) > MaxList {
		return out, fmt.Errorf("discard jobs: %d ids: want at most %d", len(d.IDs), MaxList)
	}
	if d.IDs != nil && len(d.IDs) == 0 {
		return out, nil
	}
	by := e.b.Text(d.By)
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		out = Discarded{}
		now := e.clock.Now()
		var r Reading
		if d.IDs == nil {
			r = Read(tx.Query(ctx, e.q.DiscardAll, now, by, e.b.Text(d.Schedule)))
		} else {
			r = Read(tx.Query(ctx, e.q.DiscardIDs, now, by, d.IDs))
		}
		err := r.Each(func(row Row) (bool, error) {
			var id int64
			var typ string
			if err := row.Scan(&id, &typ); err != nil {
				return false, err
			}
			tx.Counts().Move(typ, StateDead, StateDiscarded, 1)
			out.IDs = append(out.IDs, id)
			return true, nil
		})
		if err != nil || d.IDs == nil {
			return err
		}
		out.Refused, err = e.refused(ctx, tx, d.IDs, out.IDs)
		return err
	})
	if err != nil {
		return Discarded{}, fmt.Errorf("discard jobs: %w", err)
	}
	slices.Sort(out.IDs)
	return out, nil
}

// refused returns the jobs of ids not in done, with their states.
func (e *Base) refused(ctx context.Context, tx Tx, ids, done []int64) ([]RefusedJob, error) {
	states := map[int64]State{}
	err := Read(tx.Query(ctx, e.q.JobStates, ids)).Each(func(row Row) (bool, error) {
		var id int64
		var st State
		if err := row.Scan(&id, &st); err != nil {
			return false, err
		}
		states[id] = st
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	var out []RefusedJob
	for _, id := range ids {
		if !slices.Contains(done, id) && !slices.ContainsFunc(out, func(r RefusedJob) bool { return r.ID == id }) {
			out = append(out, RefusedJob{ID: id, State: states[id]})
		}
	}
	slices.SortFunc(out, func(a, b RefusedJob) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// RequestCancel implements Operator.RequestCancel. The pool holding a running
// job's lease cancels the attempt's context with a *CancelledError; the job
// may still end done or dead if it finishes first. A finished job is left as
// it is.
func (e *Base) RequestCancel(ctx context.Context, id int64, by string) (State, error) {
	var st State
	fired := false
	by = e.b.Text(by)
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		if err := tx.QueryRow(ctx, e.q.CancelState, id).Scan(&st); err != nil {
			if errors.Is(err, ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		now := e.clock.Now()
		switch st {
		case StatePending:
			f := FanInDeltas{}
			if _, err := MoveTypesFanIns(Read(tx.Query(ctx, e.q.CancelPending, now, by, id)), tx.Counts(), f, StatePending, StateCancelled); err != nil {
				return err
			}
			var err error
			fired, err = SettleFanIns(ctx, e, tx, f, now)
			return err
		case StateRunning:
			_, err := tx.Exec(ctx, e.q.CancelRunning, now, by, id)
			return err
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("cancel job %d: %w", id, err)
	}
	if st == StateRunning {
		e.b.Notify(true)
	}
	if fired {
		Wake(e)
	}
	return st, nil
}

// SaveConfig implements Operator.SaveConfig. It is durable: after power loss
// a command must not fall back to an older configuration.
func (e *Base) SaveConfig(ctx context.Context, path string, data []byte) (*StoredConfig, error) {
	c := &StoredConfig{Path: path, Data: data, SHA256: ConfigSHA256(data), LoadedAt: e.clock.Now().Truncate(time.Millisecond).UTC()}
	if data == nil {
		c.Data = []byte{} // an empty file is still a file
	}
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		_, err := tx.Exec(ctx, e.q.SaveConfig, e.b.Text(c.Path), c.Data, c.SHA256, c.LoadedAt)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("save config %s: %w", path, err)
	}
	return c, nil
}

// SetPaused implements BeatProtocol.SetPaused.
func (e *Base) SetPaused(ctx context.Context, schedule string, paused bool) error {
	now := e.clock.Now()
	var pausedAt any
	if paused {
		pausedAt = now
	}
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		_, err := tx.Exec(ctx, e.q.SetPaused, schedule, now, paused, pausedAt)
		return err
	})
	if err != nil {
		return fmt.Errorf("set paused %s: %w", schedule, err)
	}
	return nil
}

// Leave implements PoolProtocol.Leave.
func (e *Base) Leave(ctx context.Context, owner string) error {
	err := e.b.InTx(ctx, false, func(tx Tx) error {
		_, err := tx.Exec(ctx, e.q.Leave, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget pool %s: %w", owner, err)
	}
	return nil
}
