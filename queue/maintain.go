package queue

import "context"

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
