package queue

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// loop is the state of Run's one writing goroutine, which alone claims,
// records and heartbeats, so each turn is one transaction.
type loop struct {
	p             *Pool
	inflight      int
	running       map[string]int // in-flight jobs by type
	pending       []store.Result // results not yet committed
	claims        claimState
	wakes         wakeState
	row           rowState
	nextHeartbeat time.Time // when running jobs' leases are extended
	failures      int       // failed turns in a row, for back-off on a sick database
	retime        bool      // set the timer again after a clock step
	live          liveState
}

// claimState is what the loop knows of the jobs it may claim.
type claimState struct {
	more bool // the last claim filled every slot: claim again at once
	// blocked: ready jobs wait that the last claim could not take (types
	// at their limit, or a last attempt with no free worker). A finishing
	// job wakes the loop; meanwhile it looks every blockedRecheck rather
	// than spin on a past ready time.
	blocked bool
	// stopBeforeLast counts the claims left that stop before a last
	// attempt (store.Claim.StopBeforeLast), set when a claim met one so
	// later claims do not take and give back the jobs behind it.
	stopBeforeLast int
	enqueued       bool          // this process enqueued since the last turn: claim without a look
	avgRun         time.Duration // moving average of run time (-1: none yet); decides prefetch
}

// wakeState is when the loop must wake without being woken.
type wakeState struct {
	nextReady time.Time // when the next pending job is ready (zero: unknown)
	nextLease time.Time // when another owner's lease expires (zero: none)
	readAt    time.Time // when nextReady and nextLease were read
	// rateAt is when a job a rate limit held back at the claim at
	// rateSince may start (zero: none); readWakes ignores such jobs until
	// then.
	rateAt    time.Time
	rateSince time.Time
}

// rowState is the pool's row as last written, and when to renew it, an idle
// pool's only periodic write.
type rowState struct {
	written  bool
	types    []string
	versions store.Versions
	process  Process
	renewAt  time.Time
}

// now reads the clock. After a wall-clock step the loop's periods move with
// it, so a step neither delays nor hastens them; the heartbeat is due at
// once, as the step moved the leases' ends for other processes (see
// store.Leases). Row instants stay.
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

// run turns the loop until ctx is done: a transaction, then a wait.
func (l *loop) run(ctx context.Context, wake, external <-chan struct{}) {
	p := l.p
	// Reclaim at start-up: a previous life's leases may be long expired.
	l.claims.more = true
	l.wakes.nextLease = l.now()
	var timer <-chan time.Time
	var timerAt time.Time
	for {
		// Answer before counting: a test that saw the count move knows
		// the loop is past here.
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

// wait waits for the end of the loop's rest; false when ctx is done.
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
		l.stopCancelled(ctx) // another process may have cancelled a job we run
	case <-*timer:
		*timer = nil
		l.claims.more = true
	case ch := <-p.probes.Waiting():
		close(ch)
	case <-p.registered:
		l.claims.more = true
	case <-p.lives.changed:
		l.live.wanted = true
	}
	return true
}

// The default Prefetch. A transaction costs about the same whatever it
// carries, so the more jobs it records and claims, the less each pays.
const (
	defaultPrefetchPerWorker = 32
	minDefaultPrefetch       = 64
)

// prefetchWorkPerWorker is the expected work, in PrefetchBelow units,
// prefetched jobs may hold per worker.
const prefetchWorkPerWorker = 16

// capacity is how many jobs may be claimed and unfinished: the workers, plus
// the prefetch while jobs are short, capped by prefetchWorkPerWorker.
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

// failureBackoff is the rest after failures failed turns in a row.
func failureBackoff(failures int) time.Duration {
	return min(time.Duration(failures)*100*time.Millisecond, 5*time.Second)
}

// deadline is when the loop must look again unwoken, and now.
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
		// No free slot: a finishing job wakes the loop.
	case l.claims.blocked:
		// Types at their limit; another type's job may become ready.
		wants = append(wants, now.Add(blockedRecheck), w.rateAt)
	default:
		wants = append(wants, w.nextReady, w.rateAt)
	}
	if l.inflight > 0 {
		wants = append(wants, l.nextHeartbeat, l.liveDue())
	}
	for _, t := range append(wants, l.row.renewAt) {
		if !t.IsZero() && t.Before(at) {
			at = t
		}
	}
	return at, now
}

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

// add takes a finished job's result for the next transaction.
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
	// A slot is free. Claim next turn only if a job may wait: the last
	// claim filled every slot, jobs were blocked, or this job is pending
	// again. Else a job ready since wakes the loop itself, and an idle
	// pool spares a claim and a look per job.
	if l.claims.blocked || r.Outcome == OutcomeRetry || r.Outcome == OutcomeReleased {
		l.claims.more = true
	}
	l.claims.blocked = false
}

// readWakes reads nextReady and nextLease. Until rateAt, ready jobs held back
// at the last claim do not count: only unlimited types, and rate-limited jobs
// ready since that claim.
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

// stopBeforeLastClaims is how many claims stop before last attempts after one
// was met.
const stopBeforeLastClaims = 64

// blockedRecheck is how often a blocked loop looks for jobs it can take.
const blockedRecheck = 100 * time.Millisecond

// wakeEvery bounds how stale nextLease grows while claims fill every slot, so
// an abandoned lease is reclaimed in about this plus its expiry.
const wakeEvery = time.Second
