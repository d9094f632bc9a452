package queue

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// loop is the state of Run's single writing goroutine: it alone claims,
// records results and heartbeats, so each of its turns is one
// transaction (see turn).
type loop struct {
	p        *Pool
	inflight int
	running  map[string]int // in-flight jobs by type
	pending  []store.Result // results not yet committed
	claims   claimState
	wakes    wakeState
	row      rowState
	// nextHeartbeat is when the leases of the running jobs are extended.
	nextHeartbeat time.Time
	failures      int // consecutive failed turns, for back-off on a sick database
	// retime is set by a step of the clock (see now): the timer, set for
	// a time by the clock before it, is set again.
	retime bool
}

// claimState is what the loop knows of the jobs it may claim.
type claimState struct {
	// more is true while the last claim filled every free slot: more jobs
	// may be ready, so the next turn claims without waiting.
	more bool
	// blocked is true while ready jobs wait that the last claim could not
	// take: their types are at their concurrency limit, or the next one is
	// on its last attempt and no worker is free for it. A finishing job
	// wakes the loop; until then it looks again every blockedRecheck
	// instead of waking at the (past) ready time in a busy loop.
	blocked bool
	// stopBeforeLast counts the claims left that stop before a job on its
	// last attempt (store.Claim.StopBeforeLast): set when a claim met such
	// a job (and maybe gave back the prefetched jobs from it on), so that
	// the next claims do not take and give back the jobs behind it at
	// every turn. It runs down while the claims meet none.
	stopBeforeLast int
	// enqueued is set when this process enqueued a job since the last
	// turn: there is something to claim, so the turn need not look first.
	enqueued bool
	// avgRun is a moving average of how long jobs take, -1 until the first
	// result: it decides whether to prefetch.
	avgRun time.Duration
}

// wakeState is when the loop must wake without being woken.
type wakeState struct {
	nextReady time.Time // when the next pending job becomes ready (zero: none known)
	nextLease time.Time // when another owner's lease expires (zero: none)
	readAt    time.Time // when nextReady and nextLease were read
	// rateAt is when a ready job that a rate limit held back at the claim
	// at rateSince may start (zero: none was held back). Until then the
	// loop looks for the ready jobs of the other types, and for the jobs of
	// rate-limited types that became ready since, of a key that may allow
	// them (see readWakes); it wakes at rateAt to claim again, without
	// polling.
	rateAt    time.Time
	rateSince time.Time
}

// rowState is the pool's row as last written to the pools table: the
// types and versions it runs and its process, and when it is renewed
// (see presenceEvery). The renewal is the only periodic write of an idle
// pool.
type rowState struct {
	written  bool
	types    []string
	versions store.Versions
	process  Process
	renewAt  time.Time
}

// now reads the clock. The loop's periods (the heartbeat, the row's
// renewal, the look every wakeEvery) are instants of the clock at their
// start plus the period; after a step of its wall clock they move with
// it, so that a step back delays none of them and a step forward hastens
// none. The heartbeat is due at once: the step moved the ends of the
// pool's leases, as other processes judge them, by as much (see
// store.Leases), and the pool renews them by the clock as it stands. The
// instants of rows (run_at, other pools' leases, rate limits) are the
// clock's: they stay.
func (l *loop) now() time.Time {
	now, step := l.p.steps.Read(l.p.clock)
	if step != 0 {
		l.p.log.Warn("clock stepped", "step", step, "now", now)
		l.row.renewAt = l.row.renewAt.Add(step)
		l.wakes.readAt = l.wakes.readAt.Add(step)
		l.nextHeartbeat = now
		l.retime = true
	}
	return now
}

// run turns the loop until ctx is done: a transaction, then a wait for a
// result, a wake-up or the next instant something is due.
func (l *loop) run(ctx context.Context, wake, external <-chan struct{}) {
	p := l.p
	// Reclaim at start-up: leases of a previous life of this host may be
	// long expired.
	l.claims.more = true
	l.wakes.nextLease = l.now()
	var timer <-chan time.Time
	var timerAt time.Time
	for {
		// Before rounds counts this round: a test that saw the count move
		// knows the loop is past this point.
		p.probes.Answer()
		p.rounds.Add(1)
		l.collect()
		if ctx.Err() != nil {
			return
		}
		if err := l.turn(ctx, true); err != nil {
			if ctx.Err() != nil {
				return
			}
			l.failures++
			p.log.ErrorContext(ctx, "pool write failed", "err", err, "failures", l.failures)
		} else {
			l.failures = 0
		}
		if l.claims.more && l.inflight < l.capacity() && l.failures == 0 {
			continue
		}
		at, now := l.deadline()
		if !at.Equal(timerAt) || timer == nil || l.retime {
			timerAt, l.retime = at, false
			timer = p.clock.After(at.Sub(now))
		}
		if l.inflight == 0 {
			p.idleUntil.Store(at.UnixNano())
		}
		if !l.wait(ctx, wake, external, &timer) {
			return
		}
		p.idleUntil.Store(0)
	}
}

// wait waits for what ends the loop's rest, and reports false when ctx is
// done.
func (l *loop) wait(ctx context.Context, wake, external <-chan struct{}, timer *<-chan time.Time) bool {
	p := l.p
	select {
	case <-ctx.Done():
		return false
	case r := <-p.results:
		l.add(r)
	case <-wake:
		l.claims.more = true
		l.claims.enqueued = true
	case <-external:
		l.claims.more = true
		l.stopCancelled(ctx) // another process may have asked to cancel a job we run
	case <-*timer:
		*timer = nil
		l.claims.more = true
	case ch := <-p.probes.Waiting():
		close(ch)
	case <-p.registered:
		l.claims.more = true
	}
	return true
}

// The default Prefetch, for speed: a transaction costs about the same
// whatever it carries (on SQLite it writes each page it changed to the
// log, whatever the number of jobs), so the more jobs a transaction records
// and claims, the less each pays. capacity bounds the work the prefetched
// jobs hold.
const (
	defaultPrefetchPerWorker = 32
	minDefaultPrefetch       = 64
)

// prefetchWorkPerWorker is how much expected work, in multiples of
// PrefetchBelow, the prefetched jobs may hold per worker.
const prefetchWorkPerWorker = 16

// capacity is how many jobs may be claimed and not yet finished: the
// workers, plus the prefetch while jobs are short. The prefetch is
// Prefetch jobs, but no more than prefetchWorkPerWorker × PrefetchBelow of
// work per worker at the moving average, so that a prefetched job never
// waits behind more work than that for a worker.
func (l *loop) capacity() int {
	cfg, avg := l.p.cfg, l.claims.avgRun
	if avg < 0 || avg >= cfg.PrefetchBelow {
		return cfg.Workers
	}
	prefetch := cfg.Prefetch
	if avg > 0 {
		work := time.Duration(cfg.Workers*prefetchWorkPerWorker) * cfg.PrefetchBelow
		prefetch = min(prefetch, int(work/avg))
	}
	return cfg.Workers + prefetch
}

// failureBackoff is the rest after failures turns in a row failed.
func failureBackoff(failures int) time.Duration {
	return min(time.Duration(failures)*100*time.Millisecond, 5*time.Second)
}

// deadline is when the loop must look again without being woken, and the
// time it was read at.
func (l *loop) deadline() (at, now time.Time) {
	now = l.now()
	if l.failures > 0 {
		return now.Add(failureBackoff(l.failures)), now
	}
	at = now.Add(l.p.cfg.MaxIdle)
	w := l.wakes
	wants := []time.Time{w.nextLease}
	switch {
	case l.inflight >= l.capacity():
		// With no free slot a ready job cannot be taken: a finishing job
		// wakes the loop instead. Waiting on a past run_at would spin.
	case l.claims.blocked:
		// The same with a free slot but the ready jobs' types at their
		// limit; a job of another type may become ready meanwhile.
		wants = append(wants, now.Add(blockedRecheck), w.rateAt)
	default:
		wants = append(wants, w.nextReady, w.rateAt)
	}
	if l.inflight > 0 {
		wants = append(wants, l.nextHeartbeat)
	}
	for _, t := range append(wants, l.row.renewAt) {
		if !t.IsZero() && t.Before(at) {
			at = t
		}
	}
	return at, now
}

// collect takes every result already waiting.
func (l *loop) collect() {
	for {
		select {
		case r := <-l.p.results:
			l.add(r)
		default:
			return
		}
	}
}

// add takes the result of a finished job, for the next transaction.
func (l *loop) add(r store.Result) {
	l.pending = append(l.pending, r)
	l.inflight--
	l.running[r.Job.Type]--
	if r.Outcome != OutcomeReleased {
		d := r.Finished.Sub(r.Started)
		if l.claims.avgRun < 0 {
			l.claims.avgRun = d
		} else {
			l.claims.avgRun += (d - l.claims.avgRun) / 8
		}
	}
	// A slot is free. The next turn claims, and looks again, only if a job
	// may be waiting for it: the last claim filled every slot (more is set
	// still), ready jobs were blocked, or this result made its job pending
	// again (a retry, a release), which changes when the next job is
	// ready. Otherwise the last claim took every ready job it could see,
	// and a job made ready since wakes the loop by itself (a wake-up, the
	// watch, the timer at nextReady): the turn only records the result. On
	// an idle pool that spares each job a claim and a look at its end,
	// which would hold up the loop when the next job comes.
	if l.claims.blocked || r.Outcome == OutcomeRetry || r.Outcome == OutcomeReleased {
		l.claims.more = true
	}
	l.claims.blocked = false
}

// readWakes reads when the loop must wake next for a job, nextReady, and
// for another owner's lease, nextLease. Until rateAt the ready jobs that
// rate limits held back at the last claim do not count: only the jobs of
// all's unlimited types, and the jobs of rate-limited types that became
// ready after that claim (a retry, a job enqueued since: maybe of another
// key, which its bucket allows), count.
func (l *loop) readWakes(ctx context.Context, now time.Time, all []string, versions store.Versions) error {
	p, w := l.p, &l.wakes
	types := all
	held := now.Before(w.rateAt)
	rates := p.rateTypesNow()
	if held {
		types = rates.unrated
	}
	var err error
	if w.nextReady, w.nextLease, err = p.e.NextWake(ctx, p.cfg.Owner, types, versions); err != nil {
		return err
	}
	w.readAt = now
	if held {
		later, err := p.e.NextReadyAfter(ctx, rates.rated, w.rateSince)
		if err != nil {
			return err
		}
		if !later.IsZero() && (w.nextReady.IsZero() || later.Before(w.nextReady)) {
			w.nextReady = later
		}
	}
	return nil
}

// stopBeforeLastClaims is how many claims after the last one that met a
// job on its last attempt stop before such jobs (see
// claimState.stopBeforeLast).
const stopBeforeLastClaims = 64

// blockedRecheck is how often a blocked loop (see claimState.blocked)
// looks for jobs it can take.
const blockedRecheck = 100 * time.Millisecond

// wakeEvery bounds how stale nextLease may grow while every claim fills
// its slots: a lease another pool abandoned is reclaimed within about this
// long plus its expiry, however busy this pool is.
const wakeEvery = time.Second
