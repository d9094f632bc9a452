package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LiveOutput is the output of a running attempt so far: the tail, at most
// MaxOutput bytes, already redacted, that its pool stored last (see
// PoolTx.Live).
type LiveOutput struct {
	JobID   int64
	Attempt int
	Output  string
	// Updated is when the pool stored it; zero in a PoolTx, where the
	// transaction's Now is used.
	Updated time.Time
}

// LiveOutputEvery is how often a pool stores the output of its running jobs
// while it changes.
const LiveOutputEvery = 2 * time.Second

// LiveOutput implements JobViews.LiveOutput.
func (e *Base) LiveOutput(ctx context.Context, jobID int64) (LiveOutput, error) {
	if e.q.LiveOutput == "" {
		return LiveOutput{}, fmt.Errorf("live output of job %d: %w", jobID, ErrNotFound)
	}
	l := LiveOutput{JobID: jobID}
	var at Time
	err := e.b.Reader().QueryRow(ctx, e.q.LiveOutput, jobID).Scan(&l.Attempt, &l.Output, &at)
	if errors.Is(err, ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return LiveOutput{}, fmt.Errorf("live output of job %d: %w", jobID, err)
	}
	l.Updated = at.Time
	return l, nil
}
