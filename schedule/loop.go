package schedule

import (
	"context"
	"errors"
	"time"
)

// pingEvery is how often a beat pings a database that does not answer,
// give or take half at random so that many nodes do not reach a
// recovering server in step.
const pingEvery = time.Second

// pingTimeout bounds a ping, so a partitioned server cannot hold the loop.
const pingTimeout = 5 * time.Second

// sitOutRecheck is how often a beat that sits out reads the daemons' rows
// again, to take over soon after the ruling daemon stops or reloads.
const sitOutRecheck = 5 * time.Second

// Run materialises instants until ctx is done, then returns nil. A failed
// pass is logged and retried (see Beat); Run fails only while another Run
// is active.
func (b *Beat) Run(ctx context.Context) error {
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("beat: already running")
	}
	defer b.running.Store(false)
	b.log.InfoContext(ctx, "beat started")
	defer b.log.InfoContext(ctx, "beat stopped")
	var retry time.Duration
	firstPass := b.firstPass
	for ctx.Err() == nil {
		now := b.clock.Now()
		var next time.Time
		rules, err := b.agree(ctx, now)
		if err == nil && rules {
			next, err = b.pass(ctx, now)
			if ctx.Err() == nil {
				// After materialising, so a downtime's instants have jobs.
				due, aerr := b.alarmPass(ctx, now)
				err = errors.Join(err, aerr)
				if !due.IsZero() && (next.IsZero() || due.Before(next)) {
					next = due
				}
			}
		}
		if firstPass != nil {
			firstPass()
			firstPass = nil
		}
		wait := b.maxSleep
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			b.lateFrom = now
			if at := b.clock.Now(); b.ping(ctx) != nil {
				b.log.ErrorContext(ctx, "beat pass failed: database unreachable", logKeyPingEvery, pingEvery, logKeyErr, err)
				if !b.awaitDatabase(ctx, at) {
					return nil
				}
				continue
			}
			// The schedules that did advance still wake the beat on time.
			retry = min(max(2*retry, time.Second), b.maxSleep)
			wait = retry - retry/2 + b.jitter(retry/2+1)
			b.log.ErrorContext(ctx, "beat pass failed", logKeyRetryIn, wait, logKeyErr, err)
		case !rules:
			retry, b.lateFrom = 0, time.Time{}
			wait = min(wait, sitOutRecheck)
		default:
			retry, b.lateFrom = 0, time.Time{}
		}
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(b.clock.Now()), 0))
		}
		timer := b.clock.After(wait)
		if b.idleFunc != nil {
			b.idleFunc(now, next, wait)
		}
		b.probes.Answer()
		b.sleep(ctx, timer)
	}
	return nil
}

// awaitDatabase pings the database, which failed a ping at at, until it
// answers (true) or ctx is done (false). Each failed ping moves lateFrom
// to its start.
func (b *Beat) awaitDatabase(ctx context.Context, at time.Time) bool {
	since := b.lateFrom
	b.lateFrom = at
	for {
		wait := pingEvery/2 + b.jitter(pingEvery)
		timer := b.clock.After(wait)
		if b.idleFunc != nil {
			b.idleFunc(at, time.Time{}, wait)
		}
		b.probes.Answer()
		b.sleep(ctx, timer)
		if ctx.Err() != nil {
			return false
		}
		at = b.clock.Now()
		err := b.ping(ctx)
		if err == nil {
			b.log.InfoContext(ctx, "database answers again: beat resumes", logKeySince, since)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		b.lateFrom = at
		b.log.DebugContext(ctx, "database still unreachable", logKeyErr, err)
	}
}

func (b *Beat) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return b.q.Ping(ctx)
}

// sleep waits for ctx, timer or a wake-up, answering probes meanwhile.
func (b *Beat) sleep(ctx context.Context, timer <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer:
			return
		case <-b.wake:
			return
		case ch := <-b.probes.Waiting():
			close(ch)
		}
	}
}
