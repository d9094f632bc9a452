package store

import (
	"context"
	"errors"
	"fmt"
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
		return fmt.Errorf("retry job %d: no dead job with that id: %w", id, ErrNotFound)
	}
	return nil
}

// RetryAllDead implements Operator.RetryAllDead.
func (e *Base) RetryAllDead(ctx context.Context) (int64, error) { return e.retry(ctx, 0) }

// retry revives the dead job id, or all for id 0, with as many fresh attempts
// as at first. Spent attempts stay counted, so the history stays in order and
// an old attempt's late result stays fenced off.
func (e *Base) retry(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		now := e.clock.Now()
		f := FanInDeltas{}
		var err error
		if n, err = MoveTypesFanIns(Read(tx.Query(ctx, e.q.Retry, now, id)), tx.Counts(), f, StateDead, StatePending); err != nil {
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
