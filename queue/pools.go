package queue

import (
	"context"
	"fmt"

	"github.com/scheduler-run/scheduler/queue/store"
)

// presenceEvery is how often a running pool renews its row, with whatever its
// loop writes then. Every write wakes the other processes' watches, so an
// idle pool writes no more often.
const presenceEvery = store.PresenceEvery

// Announce writes the pool's row now, so others see it running (Client.Pools,
// Client.Unhandled), and deletes rows of pools gone a week. Run writes it at
// its first turn anyway; Announce makes the pool seen before a readiness
// signal. Call it before Run, from Run's goroutine.
func (p *Pool) Announce(ctx context.Context) error {
	ct := p.claimTypes(nil, 0)
	process := p.processNow()
	now, _ := p.steps.Read(p.clock) // the loop's periods start here (see loop.now)
	_, err := p.e.CommitPoolTx(ctx, store.PoolTx{Owner: p.cfg.Owner, Now: now,
		Presence: &store.Presence{Types: ct.all, Versions: ct.versions, Process: process, Workers: p.cfg.Workers, First: true}})
	p.wrote(err)
	if err != nil {
		return fmt.Errorf("announce pool %s: %w", p.cfg.Owner, err)
	}
	p.announced = rowState{written: true, types: ct.all, versions: ct.versions, process: process, renewAt: now.Add(presenceEvery)}
	return nil
}
