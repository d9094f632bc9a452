package queue

import (
	"context"
	"time"
)

// drain waits for in-flight jobs after ctx is done: ShutdownGrace, then their
// contexts are cancelled. Until the last result commits it heartbeats, so no
// running job's lease lapses and another pool runs it again. It claims and
// reclaims nothing; its writes outlive ctx up to PoolConfig.StopTimeout.
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

type drainState struct {
	grace, timer   <-chan time.Time
	graceEnded     <-chan struct{}
	timerAt        time.Time
	spent          bool // the stop's budget is spent: nothing more is written
	cancelHandlers context.CancelFunc
}

// drainTurn records and heartbeats within the stop's budget, then says once
// that it is spent.
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

// drainWait waits for a result, the grace's end or the next heartbeat.
func (l *loop) drainWait(ctx context.Context, d *drainState) {
	p := l.p
	now := l.now()
	at := l.nextHeartbeat
	if l.failures > 0 {
		at = now.Add(failureBackoff(l.failures))
	}
	switch {
	case d.spent:
		d.timer = nil // nothing more to write: wait for the handlers only
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

// leave deletes the pool's row as it stops claiming, so nobody counts on it
// to run a type or as a live daemon.
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

// flush records pending results at shutdown, retrying within ctx's deadline:
// an unrecorded result only means the job runs again.
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

// keepDeadline bounds wctx, detached from ctx, by ctx's deadline, which
// context.WithoutCancel drops.
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

// EndGrace ends the shutdown grace at once: running jobs' contexts are
// cancelled and each job is given back, attempt unspent, as its handler
// returns; Run still waits for them and their results. Before Run's ctx is
// done, it makes the shutdown skip its grace. Safe from any goroutine, more
// than once.
func (p *Pool) EndGrace() {
	p.endGrace.Do(func() {
		// Before handlers see cancellation: their errors are releases.
		p.hardStop.Store(true)
		close(p.graceEnded)
	})
}
