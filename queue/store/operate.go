package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The operator's writes, on every engine. Each is acknowledged to a person
// or a program: its commit is durable.

// Retry makes the dead job id pending again, to run at once with a fresh
// set of attempts. It returns ErrNotFound if no dead job has that id.
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

// RetryAllDead makes every dead job pending again and returns how many.
func (e *Base) RetryAllDead(ctx context.Context) (int64, error) { return e.retry(ctx, 0) }

// retry revives the dead job id, or every dead job for id 0, with as many
// fresh attempts as it had at first; the attempts spent stay counted, so
// that the history stays in order and a late result of an old attempt
// stays fenced off. The retry's instant starts the job's give_up_after
// budget again.
func (e *Base) retry(ctx context.Context, id int64) (int64, error) {
	var n int64
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		var err error
		n, err = MoveTypes(Read(tx.Query(ctx, e.q.Retry, e.clock.Now(), id)), tx.Counts(), StateDead, StatePending)
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

// RequestCancel cancels job id on behalf of by (a person or program, for
// the record) and returns the state the job was in. A pending job is
// cancelled at once. A running job is marked, and the processes on the
// database told: the pool holding its lease, in any of them, cancels the
// attempt's context with a *CancelledError and records the job cancelled;
// if that pool is gone, the job ends cancelled when its lease is
// reclaimed. A running job may still end done (or dead) if it finishes
// before its pool notices. A job already done, dead or cancelled is left
// as it is. The error wraps ErrNotFound when no job has that id.
func (e *Base) RequestCancel(ctx context.Context, id int64, by string) (State, error) {
	var st State
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
			_, err := MoveTypes(Read(tx.Query(ctx, e.q.CancelPending, now, by, id)), tx.Counts(), StatePending, StateCancelled)
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
	return st, nil
}

// SaveConfig stores data, read from the file at path, as the configuration
// the daemon now runs, replacing the one stored before. After a power loss
// an operator's command must not fall back to an older configuration than
// the one the daemon ran.
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

// SetPaused pauses or resumes a schedule durably. A schedule without a
// cursor gets one at now.
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

// Leave deletes owner's pool row: the pool stopped claiming.
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
