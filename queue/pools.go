package queue

import (
	"context"
	"fmt"

	"github.com/scheduler-run/scheduler/queue/store"
)

// A running pool keeps one row in the pools table: the types it has handlers
// for, the versions it accepts of them, and the process it runs in (with the
// config that process runs). It renews the row every presenceEvery, in
// the same transaction as whatever else its loop writes then: every write
// wakes the watches of the other processes on the database, so an idle pool
// writes no more often than this.
const presenceEvery = store.PresenceEvery

// Announce writes the pool's row now, so that other processes see it
// running (Client.Pools, Client.Unhandled) from then on, and deletes the rows
// of pools gone for a week. Run writes the row at its first turn in any
// case; call Announce before Run to be seen before a readiness signal. Call
// it from the goroutine that calls Run, before Run.
func (p *Pool) Announce(ctx context.Context) error {
	ct := p.claimTypes(nil, 0)
	process := p.processNow()
	now, _ := p.steps.Read(p.clock) // the loop's periods start here (see loop.now)
	_, err := p.e.CommitPoolTx(ctx, store.PoolTx{Owner: p.cfg.Owner, Now: now,
		Presence: &store.Presence{Types: ct.all, Versions: ct.versions, Process: process, First: true}})
	p.wrote(err)
	if err != nil {
		return fmt.Errorf("announce pool %s: %w", p.cfg.Owner, err)
	}
	p.announced = rowState{written: true, types: ct.all, versions: ct.versions, process: process, renewAt: now.Add(presenceEvery)}
	return nil
}
