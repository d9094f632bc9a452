package queue

import (
	"context"
	"time"
)

// maintain reclaims and purges every MaintenanceEvery until ctx is done.
func (p *Pool) maintain(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(p.cfg.MaintenanceEvery):
		}
		rep, err := p.e.Maintain(ctx, p.cfg.RetainDone)
		if err != nil && ctx.Err() == nil {
			p.log.ErrorContext(ctx, "maintenance failed", "err", err)
		}
		if rep.Reclaimed > 0 && p.cfg.ReclaimedFunc != nil {
			p.cfg.ReclaimedFunc(rep.Reclaimed)
		}
	}
}

// checkpointEvery is how often a pool that wrote checkpoints the WAL.
const checkpointEvery = time.Second

// checkpointer is a store (SQLite's) whose WAL a pool copies back on a
// connection of its own, so its commits rarely pay for the autocheckpoint.
type checkpointer interface {
	CheckpointPassive(ctx context.Context) error
}

// checkpoint runs c's CheckpointPassive every checkpointEvery in which the
// loop committed.
func (p *Pool) checkpoint(ctx context.Context, c checkpointer) {
	var seen int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(checkpointEvery):
		}
		if n := p.commits.Load(); n != seen {
			seen = n
			if err := c.CheckpointPassive(ctx); err != nil && ctx.Err() == nil {
				p.log.WarnContext(ctx, "background checkpoint failed", "err", err)
			}
		}
	}
}
