package queue

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// A turn of the loop is one engine transaction (store.PoolTx): plan decides
// it, lookFirst may skip the claim without the write lock, poolTx builds it,
// commit runs it, apply takes its result.

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

// claimTypes is the part of a pool's registrations a claim and its row name.
type claimTypes struct {
	all, free []string // the handled types; those without a limit
	limited   map[string]int
	versions  store.Versions
	rated     []store.RatedClaim
}

// txTimeout bounds one loop transaction, past SQLite's wait for its write
// turn (engine.Config.WriteWait): only a dead database reaches it.
const txTimeout = 5 * time.Minute

// turn runs one turn; during the stop (!claimJobs) it only records and
// heartbeats.
func (l *loop) turn(ctx context.Context, claimJobs bool) error {
	pl := l.plan(claimJobs)
	if err := l.lookFirst(ctx, &pl); err != nil {
		return err
	}
	live := l.liveOutputs(pl.now)
	if len(l.pending) == 0 && !pl.claim && !pl.reclaim && !pl.heartbeat && !pl.presence && len(live.outputs) == 0 {
		return nil
	}
	t := l.poolTx(pl)
	t.Live, t.LiveEnded = live.outputs, l.liveEnded(l.pending)
	res, err := l.commit(ctx, t)
	if err != nil {
		l.liveFailed(live)
		return err
	}
	l.liveCommitted(pl.now, live, t.LiveEnded)
	return l.apply(ctx, pl, res)
}

func (l *loop) plan(claimJobs bool) plan {
	p := l.p
	stopping := p.stopping.Load()
	pl := plan{now: l.now(), slots: l.capacity() - l.inflight, process: p.processNow()}
	pl.types = p.claimTypes(l.running, max(p.cfg.Workers-l.inflight, 0))
	pl.claim = claimJobs && l.claims.more && pl.slots > 0 && !stopping
	// A stopping pool takes on no job, not even a reclaimed one.
	pl.reclaim = !stopping && l.leaseDue(pl.now)
	pl.heartbeat = l.inflight > 0 && !pl.now.Before(l.nextHeartbeat)
	// The row telling others what the pool runs: first turn, after
	// Register or SetProcess, and at renewal.
	pl.presence = !stopping && l.row.stale(pl)
	return pl
}

func (l *loop) leaseDue(now time.Time) bool {
	return !l.wakes.nextLease.IsZero() && !now.Before(l.wakes.nextLease)
}

// stale reports whether the row must be written: none is, it differs, or its
// renewal is due.
func (r rowState) stale(pl plan) bool {
	return !r.written || !slices.Equal(pl.types.all, r.types) ||
		!maps.EqualFunc(pl.types.versions, r.versions, slices.Equal) || !sameProcess(pl.process, r.process) ||
		!pl.now.Before(r.renewAt)
}

// lookFirst, before a turn woken only to claim, reads when jobs become ready;
// if none is, the turn skips the claim, leaving the write lock to other
// processes (a second daemon, the CLI).
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
		l.claims.blocked = false // another pool took what blocked it
		pl.claim = false
		pl.reclaim = l.leaseDue(pl.now)
	}
	return nil
}

func (l *loop) poolTx(pl plan) store.PoolTx {
	p := l.p
	t := store.PoolTx{Owner: p.cfg.Owner, Now: pl.now, Results: l.pending, Reclaim: pl.reclaim}
	if pl.heartbeat {
		t.Heartbeat = pl.now.Add(p.cfg.Lease)
	}
	if pl.presence {
		t.Presence = &store.Presence{Types: pl.types.all, Versions: pl.types.versions, Process: pl.process, Workers: p.cfg.Workers,
			First: !l.row.written}
	}
	if pl.claim {
		p.keys.next()
		ct := pl.types
		t.Claim = &store.Claim{Lease: p.cfg.Lease, N: pl.slots, Types: ct.free, Limited: ct.limited, Versions: ct.versions, Rated: ct.rated,
			Prefetch: max(pl.slots-max(p.cfg.Workers-l.inflight, 0), 0), StopBeforeLast: l.claims.stopBeforeLast > 0}
	}
	return t
}

// commit runs t. Shutdown does not cancel it halfway: a commit cancelled as
// the server commits reports an error yet took effect, and its results would
// fail their fences next turn. txTimeout bounds it instead, and once
// stopping, ctx's deadline.
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

// apply takes the committed turn's result: reports, logs, notes the row and
// heartbeat, hands claimed jobs to workers, and reads when to wake.
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
		l.stopCancelled(ctx) // in case a watch wake-up was missed
	}
	if pl.claim {
		l.dispatch(pl, res)
	}
	return l.lookAfter(ctx, pl, len(res.Claimed))
}

func (l *loop) dispatch(pl plan, res store.PoolTxResult) {
	p := l.p
	l.wakes.rateAt, l.wakes.rateSince = res.RateWait, pl.now
	if p.rateTypesNow().keyed && l.wakes.rateAt.After(pl.now.Add(p.cfg.MaxIdle)) {
		// readWakes finds an allowed key's job only if it became ready
		// after this claim; one with an earlier run_at waits MaxIdle.
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
		p.work <- j // never blocks: the buffer holds every in-flight job
	}
}

// lookAfter reads when to wake after a turn that reclaimed or whose claim
// fell short; a full claim comes back at once, reading leases every
// wakeEvery. Later commits of other processes wake the loop by the watch.
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
