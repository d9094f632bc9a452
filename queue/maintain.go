package queue

import (
	"context"
	"time"
)

// maintain runs reclaim and purge every MaintenanceEvery until ctx is done.
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

// checkpointer is a store that wants a background checkpoint while a pool
// commits: SQLite's (*sqlite.Store), whose write-ahead log is copied back
// into the database file, on a connection of its own, so that the pool's
// own commits rarely reach the autocheckpoint threshold and pay for it.
type checkpointer interface {
	CheckpointPassive(ctx context.Context) error
}

// checkpoint calls c's CheckpointPassive in the background, once a second
// while the loop commits.
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
