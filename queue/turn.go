package queue

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// A turn of the loop is one transaction of the engine (store.PoolTx): it
// records the results that came in, reclaims expired leases when one is
// due, heartbeats when due, writes the pool's row when it changed or is to
// be renewed, and claims for the free slots. The steps: plan decides what
// the turn does, lookFirst may find that there is nothing to claim
// without taking the write lock, poolTx builds the transaction, commit
// runs it, apply takes its result.

// plan is what one turn does.
type plan struct {
	now       time.Time
	slots     int // free slots: jobs a claim may take
	claim     bool
	reclaim   bool
	heartbeat bool
	presence  bool
	types     claimTypes // what the pool takes
	process   Process    // what its row says of its program
}

// claimTypesOf is the part of a pool's registrations that a claim and its
// row name.
type claimTypes struct {
	all, free []string // the handled types; those without a limit
	limited   map[string]int
	versions  store.Versions
	rated     []store.RatedClaim
}

// txTimeout bounds one transaction of the loop: longer than SQLite's wait
// for its write turn (see engine.Config.WriteWait), so that only a
// database that stopped answering reaches it.
const txTimeout = 5 * time.Minute

// turn runs one turn of the loop: claimJobs is false during the stop,
// which only records results and heartbeats.
func (l *loop) turn(ctx context.Context, claimJobs bool) error {
	pl := l.plan(claimJobs)
	if err := l.lookFirst(ctx, &pl); err != nil {
		return err
	}
	if len(l.pending) == 0 && !pl.claim && !pl.reclaim && !pl.heartbeat && !pl.presence {
		return nil
	}
	res, err := l.commit(ctx, l.poolTx(pl))
	if err != nil {
		return err
	}
	return l.apply(ctx, pl, res)
}

// plan decides what this turn does.
func (l *loop) plan(claimJobs bool) plan {
	p := l.p
	stopping := p.stopping.Load()
	pl := plan{now: l.now(), slots: l.capacity() - l.inflight, process: p.processNow()}
	pl.types = p.claimTypes(l.running, max(p.cfg.Workers-l.inflight, 0))
	pl.claim = claimJobs && l.claims.more && pl.slots > 0 && !stopping
	// A stopping pool only records and heartbeats: it takes on no job,
	// not even a reclaimed one.
	pl.reclaim = !stopping && l.leaseDue(pl.now)
	pl.heartbeat = l.inflight > 0 && !pl.now.Before(l.nextHeartbeat)
	// The row that tells other processes which types (and versions) this
	// pool runs, and the config its program runs: at the first turn, after
	// a Register or a SetProcess, and renewed while the pool runs.
	pl.presence = !stopping && l.row.stale(pl)
	return pl
}

// leaseDue reports whether another owner's lease has expired by now.
func (l *loop) leaseDue(now time.Time) bool {
	return !l.wakes.nextLease.IsZero() && !now.Before(l.wakes.nextLease)
}

// stale reports whether the row must be written at this turn: none is, it
// says other types, versions or another process, or its renewal is due.
func (r rowState) stale(pl plan) bool {
	return !r.written || !slices.Equal(pl.types.all, r.types) ||
		!maps.EqualFunc(pl.types.versions, r.versions, slices.Equal) || !sameProcess(pl.process, r.process) ||
		!pl.now.Before(r.renewAt)
}

// lookFirst reads when jobs become ready before a turn that would only
// claim, woken with nothing to record: when none is ready, the turn
// claims nothing and leaves the write lock, which another process (a
// second daemon, the CLI) may want.
func (l *loop) lookFirst(ctx context.Context, pl *plan) error {
	enqueued := l.claims.enqueued
	l.claims.enqueued = false
	if !pl.claim || enqueued || len(l.pending) > 0 || pl.reclaim || pl.heartbeat || pl.presence {
		return nil
	}
	if err := l.readWakes(ctx, pl.now, pl.types.all, pl.types.versions); err != nil {
		return err
	}
	if l.wakes.nextReady.IsZero() || l.wakes.nextReady.After(pl.now) {
		l.claims.more = false
		l.claims.blocked = false // what blocked it was taken, by another pool
		pl.claim = false
		pl.reclaim = l.leaseDue(pl.now)
	}
	return nil
}

// poolTx builds the transaction of pl.
func (l *loop) poolTx(pl plan) store.PoolTx {
	p := l.p
	t := store.PoolTx{Owner: p.cfg.Owner, Now: pl.now, Results: l.pending, Reclaim: pl.reclaim}
	if pl.heartbeat {
		t.Heartbeat = pl.now.Add(p.cfg.Lease)
	}
	if pl.presence {
		t.Presence = &store.Presence{Types: pl.types.all, Versions: pl.types.versions, Process: pl.process, First: !l.row.written}
	}
	if pl.claim {
		p.keys.next()
		ct := pl.types
		t.Claim = &store.Claim{Lease: p.cfg.Lease, N: pl.slots, Types: ct.free, Limited: ct.limited, Versions: ct.versions, Rated: ct.rated,
			Prefetch: max(pl.slots-max(p.cfg.Workers-l.inflight, 0), 0), StopBeforeLast: l.claims.stopBeforeLast > 0}
	}
	return t
}

// commit runs t. Shutdown does not cancel it halfway: a commit cancelled
// while the server commits it reports an error although it took effect,
// and its results, recorded again by the next turn, would fail their
// fences as stale. txTimeout bounds a transaction on a database that
// stopped answering instead, and so does the stop's budget, ctx's
// deadline, once the pool stops.
func (l *loop) commit(ctx context.Context, t store.PoolTx) (store.PoolTxResult, error) {
	p := l.p
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), txTimeout)
	if p.stopping.Load() {
		tctx, cancel = keepDeadline(ctx, tctx, cancel)
	}
	res, err := p.e.CommitPoolTx(tctx, t)
	cancel()
	p.wrote(err)
	if err == nil {
		p.commits.Add(1)
	}
	return res, err
}

// apply takes the result of the turn pl committed: it reports and logs the
// results and reclaims, notes the row written and the next heartbeat, hands
// the claimed jobs to the workers, and reads when to wake next.
func (l *loop) apply(ctx context.Context, pl plan, res store.PoolTxResult) error {
	p := l.p
	p.report(l.pending, res.Fenced, len(res.Reclaimed))
	if pl.presence {
		l.row = rowState{written: true, types: pl.types.all, versions: pl.types.versions, process: pl.process,
			renewAt: pl.now.Add(presenceEvery)}
	}
	for i, r := range l.pending {
		p.logResult(ctx, r, res.Fenced[i])
	}
	l.pending = l.pending[:0]
	for _, r := range res.Reclaimed {
		p.log.WarnContext(ctx, "job lease reclaimed", "job_id", r.ID, "attempt", r.Attempt, "owner", r.Owner, "dead", r.Dead)
	}
	if pl.heartbeat || (l.inflight == 0 && len(res.Claimed) > 0) {
		l.nextHeartbeat = pl.now.Add(p.cfg.Lease / 3)
	}
	if pl.heartbeat {
		l.stopCancelled(ctx) // in case a wake-up of the watch was missed
	}
	if pl.claim {
		l.dispatch(pl, res)
	}
	return l.lookAfter(ctx, pl, len(res.Claimed))
}

// dispatch notes what a claim found and hands the jobs it took to the
// workers.
func (l *loop) dispatch(pl plan, res store.PoolTxResult) {
	p := l.p
	l.wakes.rateAt, l.wakes.rateSince = res.RateWait, pl.now
	if p.rateTypesNow().keyed && l.wakes.rateAt.After(pl.now.Add(p.cfg.MaxIdle)) {
		// A job of another key, which its bucket allows, is looked for by
		// readWakes only when it became ready after this claim; one that
		// came with an earlier run_at (a backfill, an enqueue in this
		// claim's millisecond) waits at most MaxIdle, the safety net of
		// every other wake-up too.
		l.wakes.rateAt = pl.now.Add(p.cfg.MaxIdle)
	}
	l.claims.more = len(res.Claimed) == pl.slots
	switch {
	case res.GaveBack || slices.ContainsFunc(res.Claimed, (*Job).LastAttempt):
		l.claims.stopBeforeLast = stopBeforeLastClaims
	case l.claims.stopBeforeLast > 0:
		l.claims.stopBeforeLast--
	}
	p.keys.claimed(res.Claimed)
	for _, j := range res.Claimed {
		l.inflight++
		l.running[j.Type]++
		p.work <- j // never blocks: in-flight jobs never outnumber the buffer
	}
}

// lookAfter reads when to wake next, after a turn that reclaimed, or whose
// claim fell short of its slots (a claim that filled every slot comes back
// at once, and reads other pools' leases at least every wakeEvery). A
// commit by another process after this read wakes the loop through the
// watch.
func (l *loop) lookAfter(ctx context.Context, pl plan, claimed int) error {
	short := pl.claim && claimed < pl.slots
	if !pl.reclaim && !short && !(pl.claim && pl.now.Sub(l.wakes.readAt) >= wakeEvery) {
		if pl.claim {
			l.claims.blocked = false
		}
		return nil
	}
	if err := l.readWakes(ctx, pl.now, pl.types.all, pl.types.versions); err != nil {
		return err
	}
	// Short with a job ready: one the claim could not take.
	l.claims.blocked = short && !l.wakes.nextReady.IsZero() && !l.wakes.nextReady.After(pl.now)
	return nil
}
