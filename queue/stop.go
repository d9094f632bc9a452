package queue

import (
	"context"
	"time"
)

// drain waits for in-flight jobs after ctx is done: ShutdownGrace, then their
// contexts are cancelled, and it waits on for them to return (a command gets
// its kill grace). Until the last result is committed it heartbeats as
// before, so that no lease of a job still running lapses and another pool
// reclaims and runs it a second time (or makes it dead on its last
// attempt). It claims and reclaims nothing. Its writes outlive ctx, up to
// the stop's timeout (see PoolConfig.StopTimeout); past it, it only waits
// for the handlers to return.
func (l *loop) drain(ctx context.Context, cancelHandlers context.CancelFunc) {
	p := l.p
	p.stopping.Store(true)
	budget := time.Duration(p.stopTimeout.Load())
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	defer cancel()
	l.leave(bg)
	if l.inflight > 0 {
		p.log.InfoContext(bg, "pool stopping", "running", l.inflight, "grace", p.cfg.ShutdownGrace)
	}
	d := drainState{grace: p.clock.After(p.cfg.ShutdownGrace), graceEnded: p.graceEnded, cancelHandlers: cancelHandlers}
	for l.inflight > 0 {
		p.probes.Answer()
		l.collect()
		l.drainTurn(bg, &d, budget)
		if l.inflight == 0 {
			break
		}
		l.drainWait(bg, &d)
	}
	l.flush(bg)
}

// drainState is what the drain waits on.
type drainState struct {
	grace, timer   <-chan time.Time
	graceEnded     <-chan struct{}
	timerAt        time.Time
	spent          bool // the stop's budget is spent: nothing more is written
	cancelHandlers context.CancelFunc
}

// drainTurn records the results that came in, and heartbeats, within the
// stop's budget; once it is spent, it says so once and writes nothing.
func (l *loop) drainTurn(ctx context.Context, d *drainState, budget time.Duration) {
	p := l.p
	switch err := ctx.Err(); {
	case err != nil && !d.spent:
		d.spent = true
		p.log.ErrorContext(ctx, "stop timeout spent: results are no longer recorded", "stop_timeout", budget, "running", l.inflight)
	case err != nil:
	default:
		if err := l.turn(ctx, false); err != nil {
			l.failures++
			p.log.ErrorContext(ctx, "pool write failed", "err", err, "failures", l.failures)
		} else {
			l.failures = 0
		}
	}
}

// drainWait waits for a result, the end of the grace, or the next
// heartbeat.
func (l *loop) drainWait(ctx context.Context, d *drainState) {
	p := l.p
	now := l.now()
	at := l.nextHeartbeat
	if l.failures > 0 {
		at = now.Add(failureBackoff(l.failures))
	}
	switch {
	case d.spent:
		d.timer = nil // nothing more to write: only the handlers are waited for
	case d.timer == nil || !at.Equal(d.timerAt) || l.retime:
		d.timerAt, l.retime = at, false
		d.timer = p.clock.After(at.Sub(now))
	}
	select {
	case r := <-p.results:
		l.add(r)
	case <-d.grace:
		d.grace = nil
		if !p.hardStop.Load() {
			p.log.WarnContext(ctx, "shutdown grace over, cancelling jobs", "running", l.inflight)
		}
		p.hardStop.Store(true)
		d.cancelHandlers()
	case <-d.graceEnded:
		// EndGrace sets hardStop itself, before it returns.
		d.graceEnded = nil
		d.cancelHandlers()
	case <-d.timer:
		d.timer = nil
	case ch := <-p.probes.Waiting():
		close(ch)
	}
}

// leave deletes the pool's row as it stops claiming: from then on no
// other process should count on it, to run a type or as a running daemon.
// Left behind, the row would count as a running pool's for AliveWithin.
func (l *loop) leave(ctx context.Context) {
	p := l.p
	if !l.row.written {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, stopWriteTimeout)
	defer cancel()
	if err := p.e.Leave(ctx, p.cfg.Owner); err != nil {
		p.log.WarnContext(ctx, "pool record not removed", "err", err)
		return
	}
	l.row = rowState{}
}

// flush records pending results during shutdown, retrying a few times on a
// busy database, within ctx's deadline (the stop's): an unrecorded result
// only means the lease expires and the job runs again.
func (l *loop) flush(ctx context.Context) {
	for try := 0; len(l.pending) > 0 && try < 3 && ctx.Err() == nil; try++ {
		tctx, cancel := context.WithTimeout(ctx, stopWriteTimeout)
		err := l.turn(tctx, false)
		cancel()
		if err != nil {
			l.p.log.ErrorContext(ctx, "record results at shutdown", "err", err, "results", len(l.pending))
		}
	}
	if len(l.pending) > 0 {
		l.p.log.ErrorContext(ctx, "results not recorded at shutdown: their jobs run again once their leases expire", "results", len(l.pending))
	}
}

// stopWriteTimeout bounds one write of the stop, within its budget.
const stopWriteTimeout = 10 * time.Second

// keepDeadline bounds wctx, a context for a write detached from ctx's
// cancellation (cancel cancels it), by ctx's deadline too, if it has one:
// context.WithoutCancel drops the deadline with the cancellation.
func keepDeadline(ctx, wctx context.Context, cancel context.CancelFunc) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return wctx, cancel
	}
	wctx, cancelDeadline := context.WithDeadline(wctx, d)
	return wctx, func() {
		cancelDeadline()
		cancel()
	}
}

// EndGrace ends the shutdown grace at once: the contexts of running jobs are
// cancelled, and each job is given back without spending its attempt as
// its handler returns. Run still returns only once every handler has
// returned and the results are committed. EndGrace before Run's ctx is done
// makes the coming shutdown skip its grace. It is safe to call from any
// goroutine, more than once.
func (p *Pool) EndGrace() {
	p.endGrace.Do(func() {
		// Before the handlers see their contexts cancelled: an error they
		// return from now on is a release, not a failed attempt.
		p.hardStop.Store(true)
		close(p.graceEnded)
	})
}
