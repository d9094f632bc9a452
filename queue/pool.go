package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/liveness"
	"github.com/scheduler-run/scheduler/queue/store"
)

// PoolConfig configures a Pool. Zero values select the defaults shown.
type PoolConfig struct {
	Workers int // Jobs run at once. Default: GOMAXPROCS.
	// Prefetch is how many jobs the pool may claim beyond its free workers,
	// to hand a worker its next job the moment it finishes one and to claim
	// and complete in larger transactions. The pool prefetches only while
	// its jobs are short (a moving average under PrefetchBelow), so a
	// prefetched job waits for a worker briefly and long jobs never hold
	// claims they cannot start. A job on its last attempt is never
	// prefetched: a crash spends the attempt of every claimed job, started
	// or not. However many it allows, the prefetched jobs hold at most
	// 16 × PrefetchBelow of expected work (by the moving average) per
	// worker. Default: 32 × Workers, and at least 64; negative disables.
	Prefetch int
	// PrefetchBelow is the average job duration under which the pool
	// prefetches. Default: 5ms.
	PrefetchBelow time.Duration
	// Lease is how long a claim holds a job without a heartbeat; the pool
	// heartbeats its running jobs every third of it, during the shutdown
	// too, until each job's result is committed. So the lease need not
	// outlast ShutdownGrace or a command's kill grace. At least MinLease.
	// Default: 1m.
	Lease time.Duration
	// ShutdownGrace is the time running jobs get after Run's ctx is done,
	// before their contexts are cancelled. Default: 30s.
	ShutdownGrace time.Duration
	// StopTimeout bounds the stop, from the moment Run's ctx is done: each
	// write of the stop (the pool's row, the heartbeats of running jobs,
	// the results of those that return) ends by then, whatever the
	// database does, so that Run returns within it unless a handler
	// outlives it. Past it the pool writes nothing more: a result not yet
	// recorded is lost, and its job runs again once its lease expires (as
	// after a crash). See Pool.SetStopTimeout. Default: ShutdownGrace + 30s.
	StopTimeout time.Duration
	// WatchInterval is how often the pool checks whether another process
	// wrote to the file (PRAGMA data_version, a read of shared memory)
	// where it cannot watch the file. On Linux the pool watches the
	// database's directory with inotify instead and reads data_version
	// only after a write (every millisecond instead while writes keep
	// coming), so that a job enqueued by the CLI starts within
	// milliseconds and an idle pool does not poll; it falls back to
	// polling, and logs so once, when inotify is unavailable or its limits
	// are reached. Default: 2s.
	WatchInterval time.Duration
	// MaxIdle bounds an idle pool's sleep between looks at the table, a
	// safety net under the wake-ups of the watch; with a watch, it is also
	// the period of the watch's own safety read. Default: 30s.
	MaxIdle time.Duration
	// MaintenanceEvery is the period of reclaim and purge. Default: 1h.
	// Negative disables periodic maintenance (reclaim still runs at start-up
	// and whenever a lease held by another pool expires).
	MaintenanceEvery time.Duration
	// RetainDone is how long done jobs are kept before purge. Default: 168h.
	RetainDone time.Duration
	// Owner names this pool in leases and the attempt history.
	// Default: host:pid:random.
	Owner string
	// Process describes the program the pool runs in, in its row of the
	// pools table (see Client.Pools).
	Process Process
	Clock   clock.Clock  // Default: the Store's clock (Store.Clock).
	Logger  *slog.Logger // Default: the Queue's logger.

	// FinishedFunc, when set, is called with each attempt's result once
	// the transaction that recorded it committed and its fence held (a
	// stale result is not reported), from the pool's loop: it must not
	// block. Nil reports nothing.
	FinishedFunc func(Finished)
	// ReclaimedFunc, when set, is called with the number of expired
	// leases the pool took back, after each commit that took back any
	// (the loop's trips and periodic maintenance), from the pool's
	// goroutines: it must not block. Nil reports nothing.
	ReclaimedFunc func(n int)
	// WroteFunc, when set, is called after each write transaction of the
	// pool's loop (results, claims, heartbeats, its row, which it renews
	// at least every 30s) and of Announce, with nil when it committed and
	// its error when it failed, from the calling goroutine: it must not
	// block. Nil reports nothing.
	WroteFunc func(err error)

	jitter func(time.Duration) time.Duration // tests fix the backoff jitter
}

// MinLease is the shortest lease a Pool accepts. The pool heartbeats every
// third of its lease, and each heartbeat is a write that must commit before
// the lease runs out, behind other writers of the file.
const MinLease = time.Second

// Pool runs jobs from a Queue on a bounded number of goroutines. Register
// handlers, then call Run. Register is safe to call while Run runs.
type Pool struct {
	q     *Client
	e     store.PoolProtocol // q's engine
	cfg   PoolConfig
	clock clock.Clock
	log   *slog.Logger

	mu       sync.RWMutex
	handlers map[string]registered
	// allTypes are the handled types, sorted, and freeTypes the same
	// without the types that have a concurrency limit. Register replaces
	// them and never changes them in place: they are passed to the store
	// as they are.
	allTypes  []string
	freeTypes []string
	// versions are the versions accepted of the types that accept more or
	// other than version 1 (see store.Versions); nil when none does.
	// Register replaces it, as it does the lists.
	versions store.Versions
	// rates are allTypes split by whether they have a rate limit (see
	// loop.look), replaced by Register as the lists are.
	rates rateTypes
	// process is what the pool's row says of its program: PoolConfig.Process
	// until SetProcess replaces it.
	process Process

	registered chan struct{} // a Register or SetProcess while Run runs: claim the new type, write the row, at once

	work     chan *Job
	results  chan store.Result
	stopping atomic.Bool // no new handler starts
	hardStop atomic.Bool // handlers' contexts were cancelled by shutdown
	running  atomic.Bool
	busy     atomic.Int64 // handlers running now (see Busy)
	trips    atomic.Int64 // loop iterations, for tests of idleness
	commits  atomic.Int64 // write transactions of the loop, for the checkpointer
	// idleUntil is, while the running loop waits with no job in flight,
	// the instant (Unix nanoseconds) its timer wakes it; zero otherwise.
	// Tests that drive a fake clock from one of the loop's wake-ups to the
	// next read it: past the clock's now, the loop has done what now asked
	// of it.
	idleUntil atomic.Int64

	cut         chan struct{} // closed by EndGrace
	stopTimeout atomic.Int64  // StopTimeout, or what SetStopTimeout set
	cutOnce     sync.Once
	probes      liveness.Probes // see Probe
	stops       stops           // running attempts' contexts, for cancel requests
	keys        *rateKeys       // the keys of keyed rate limits, for claims

	// steps notices the steps of the clock's wall clock between the
	// readings of Announce and Run's loop (see loop.now).
	steps clock.Steps

	// announced is the list of types Announce wrote to the pools table,
	// at announcedAt; Run's loop takes it from there.
	announced         []string
	announcedVersions store.Versions
	announcedAt       time.Time
	announcedOK       bool
	announcedProcess  Process
}

type registered struct {
	h  Handler
	tc TypeConfig
	// key is the store's Key of the type's limit (see rateKeys); nil
	// without a keyed rate limit.
	key func(id int64, payload json.RawMessage) (string, error)
}

// NewPool returns a Pool that runs the jobs of q.
func NewPool(q *Client, cfg PoolConfig) (*Pool, error) {
	if q == nil {
		return nil, errors.New("new pool: nil client")
	}
	if cfg.Workers < 0 || cfg.PrefetchBelow < 0 || cfg.Lease < 0 || cfg.ShutdownGrace < 0 || cfg.StopTimeout < 0 || cfg.WatchInterval < 0 || cfg.MaxIdle < 0 || cfg.RetainDone < 0 {
		return nil, errors.New("new pool: negative setting")
	}
	if cfg.Workers == 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case cfg.Prefetch == 0:
		cfg.Prefetch = max(defaultPrefetchPerWorker*cfg.Workers, minDefaultPrefetch)
	case cfg.Prefetch < 0:
		cfg.Prefetch = 0
	}
	if cfg.PrefetchBelow == 0 {
		cfg.PrefetchBelow = 5 * time.Millisecond
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Lease < MinLease {
		return nil, fmt.Errorf("new pool: lease %s is shorter than %s: the pool heartbeats every third of it", cfg.Lease, MinLease)
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 30 * time.Second
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = cfg.ShutdownGrace + 30*time.Second
	}
	if cfg.WatchInterval == 0 {
		cfg.WatchInterval = 2 * time.Second
	}
	if cfg.MaxIdle == 0 {
		cfg.MaxIdle = 30 * time.Second
	}
	if cfg.MaintenanceEvery == 0 {
		cfg.MaintenanceEvery = time.Hour
	}
	if cfg.RetainDone == 0 {
		cfg.RetainDone = 7 * 24 * time.Hour
	}
	if cfg.Process.PID == 0 {
		cfg.Process.PID = os.Getpid()
	}
	if cfg.Process.Host == "" {
		cfg.Process.Host, _ = os.Hostname()
	}
	if cfg.Process.Version == "" {
		cfg.Process.Version = "dev"
	}
	if cfg.Owner == "" {
		var b [3]byte
		rand.Read(b[:])
		cfg.Owner = cfg.Process.Host + ":" + strconv.Itoa(cfg.Process.PID) + ":" + hex.EncodeToString(b[:])
	}
	if cfg.Clock == nil {
		cfg.Clock = q.clock
	}
	if cfg.Logger == nil {
		cfg.Logger = q.log
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	p := &Pool{
		q:          q,
		e:          q.engine,
		cfg:        cfg,
		clock:      cfg.Clock,
		log:        cfg.Logger.With("component", "pool"),
		handlers:   map[string]registered{},
		work:       make(chan *Job, cfg.Workers+cfg.Prefetch),
		results:    make(chan store.Result, cfg.Workers+cfg.Prefetch),
		allTypes:   []string{},
		freeTypes:  []string{},
		rates:      rateTypes{unrated: []string{}},
		process:    cfg.Process,
		registered: make(chan struct{}, 1),
		cut:        make(chan struct{}),
		probes:     liveness.New(),
	}
	p.keys = newRateKeys(p.log)
	p.stopTimeout.Store(int64(cfg.StopTimeout))
	return p, nil
}

// SetStopTimeout replaces StopTimeout for a stop that has not begun: a
// daemon gives its pools what is left, of the stop budget it announced,
// for their writes. It is safe to call from any goroutine.
func (p *Pool) SetStopTimeout(d time.Duration) {
	if d > 0 {
		p.stopTimeout.Store(int64(d))
	}
}

// Workers returns how many jobs the pool runs at once.
func (p *Pool) Workers() int { return p.cfg.Workers }

// Owner returns the token that marks this pool's leases.
func (p *Pool) Owner() string { return p.cfg.Owner }

// Register sets the handler and policy of a job type, replacing any earlier
// one. Jobs already running keep the handler they started with. A pool
// claims only jobs of the types registered: others stay pending, for a pool
// that has their handler (see Client.Unhandled). Registered while Run runs,
// a type is claimed at once.
func (p *Pool) Register(jobType string, h Handler, tc TypeConfig) error {
	if jobType == "" || h == nil {
		return errors.New("register: empty type or nil handler")
	}
	if tc.Timeout < 0 || tc.Concurrency < 0 || tc.Backoff < 0 || tc.MaxBackoff < 0 || tc.GiveUpAfter < 0 {
		return fmt.Errorf("register %s: negative setting", jobType)
	}
	accepts, err := acceptedVersions(tc.Accepts)
	if err != nil {
		return fmt.Errorf("register %s: %w", jobType, err)
	}
	tc.Accepts = accepts
	if err := tc.Rate.check(); err != nil {
		return fmt.Errorf("register %s: %w", jobType, err)
	}
	reg := registered{h: h, tc: tc}
	if tc.Rate.Key != nil {
		reg.key = p.keys.keyFunc(jobType, tc.Rate)
	}
	p.mu.Lock()
	p.handlers[jobType] = reg
	all, free := []string{}, []string{}
	rates := rateTypes{unrated: []string{}}
	var versions store.Versions
	for _, t := range slices.Sorted(maps.Keys(p.handlers)) {
		all = append(all, t)
		tc := p.handlers[t].tc
		switch {
		case tc.Rate.Starts > 0:
			rates.rated = append(rates.rated, t)
			rates.keyed = rates.keyed || tc.Rate.Key != nil
		case tc.Concurrency == 0:
			rates.unrated = append(rates.unrated, t)
			free = append(free, t)
		default:
			rates.unrated = append(rates.unrated, t)
		}
		if a := p.handlers[t].tc.Accepts; len(a) != 1 || a[0] != 1 {
			if versions == nil {
				versions = store.Versions{}
			}
			versions[t] = a
		}
	}
	p.allTypes, p.freeTypes, p.versions, p.rates = all, free, versions, rates
	p.mu.Unlock()
	select {
	case p.registered <- struct{}{}:
	default:
	}
	return nil
}

// SetProcess replaces what the pool's row says of its program, such as the
// config it now runs (Process.Config and ConfigAt); a zero PID, Host or
// Version keeps the pool's. A running pool rewrites its row at once, from
// its loop. It is safe to call from any goroutine.
func (p *Pool) SetProcess(pr Process) {
	p.mu.Lock()
	if pr.PID == 0 {
		pr.PID = p.process.PID
	}
	if pr.Host == "" {
		pr.Host = p.process.Host
	}
	if pr.Version == "" {
		pr.Version = p.process.Version
	}
	p.process = pr
	p.mu.Unlock()
	select {
	case p.registered <- struct{}{}:
	default:
	}
}

// processNow returns what the pool's row says of its program.
func (p *Pool) processNow() Process {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.process
}

// sameProcess reports whether a and b describe a program alike.
func sameProcess(a, b Process) bool {
	return a.PID == b.PID && a.Host == b.Host && a.Version == b.Version && a.Config == b.Config && a.ConfigAt.Equal(b.ConfigAt)
}

// acceptedVersions returns accepts sorted, [1] when it is empty, or an
// error for a version below 1 or a repeated one.
func acceptedVersions(accepts []int) ([]int, error) {
	if len(accepts) == 0 {
		return []int{1}, nil
	}
	out := slices.Sorted(slices.Values(accepts))
	for i, v := range out {
		if v < 1 {
			return nil, fmt.Errorf("accepted version %d is not at least 1", v)
		}
		if i > 0 && out[i-1] == v {
			return nil, fmt.Errorf("version %d accepted twice", v)
		}
	}
	return out, nil
}

func (p *Pool) lookup(jobType string) (registered, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	r, ok := p.handlers[jobType]
	return r, ok
}

// claimTypes returns the handled types, those without a concurrency or rate
// limit, for each type with a concurrency limit but no rate limit how many
// more of its jobs may start, the versions accepted (nil while every type
// accepts version 1 alone), and the types with a rate limit, each with room
// for its concurrency limit and the idle workers (never a prefetch: see
// Rate). The caller must not change them.
func (p *Pool) claimTypes(running map[string]int, idle int) (all, free []string, limited map[string]int, versions store.Versions, rated []store.RatedClaim) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, t := range p.rates.rated {
		tc := p.handlers[t].tc
		room := idle
		if tc.Concurrency > 0 {
			room = min(room, max(tc.Concurrency-running[t], 0))
		}
		l := tc.Rate.limit()
		l.Key = p.handlers[t].key
		rated = append(rated, store.RatedClaim{Type: t, Limit: l, Versions: p.versions.Of(t), Room: room})
	}
	return p.allTypes, p.freeTypes, p.limitsLocked(running), p.versions, rated
}

// rateTypes are a pool's handled types split by whether they have a rate
// limit, and whether one of those limits is per key.
type rateTypes struct {
	unrated, rated []string
	keyed          bool
}

// rateTypesNow returns the pool's rateTypes. The caller must not change
// the lists.
func (p *Pool) rateTypesNow() rateTypes {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.rates
}

func (p *Pool) limitsLocked(running map[string]int) map[string]int {
	var out map[string]int
	for t, r := range p.handlers {
		if r.tc.Concurrency > 0 && r.tc.Rate.Starts == 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[t] = max(r.tc.Concurrency-running[t], 0)
		}
	}
	return out
}

// Run claims and runs jobs until ctx is done, then shuts down: it stops
// claiming at once, gives running jobs ShutdownGrace to finish, then cancels
// their contexts and gives their attempts back. It returns once every
// goroutine it started has returned. A Pool runs once.
func (p *Pool) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("pool: Run called twice")
	}
	wake, unsubscribe := p.e.Subscribe()
	defer unsubscribe()

	// Handlers outlive ctx by the shutdown grace; they are cancelled on their own.
	handlerCtx, cancelHandlers := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelHandlers()
	var workers sync.WaitGroup
	for i := range p.cfg.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			p.worker(handlerCtx, p.cfg.Owner+"/w"+strconv.Itoa(i))
		}()
	}

	var helpers sync.WaitGroup
	external := make(chan struct{}, 1)
	watching := make(chan struct{})
	helpers.Add(1)
	go func() {
		defer helpers.Done()
		p.e.Watch(ctx, store.WatchConfig{Poll: p.cfg.WatchInterval, Safety: p.cfg.MaxIdle}, external,
			func() { close(watching) })
	}()
	// The watch's first reading must come before the first claim: a commit
	// between the two would otherwise go unnoticed until MaxIdle.
	<-watching
	if c, ok := p.e.(checkpointer); ok {
		helpers.Add(1)
		go func() {
			defer helpers.Done()
			p.checkpoint(ctx, c)
		}()
	}
	if p.cfg.MaintenanceEvery > 0 {
		helpers.Add(1)
		go func() {
			defer helpers.Done()
			p.maintain(ctx)
		}()
	}

	// Types registered before Run are claimed from the first trip on.
	select {
	case <-p.registered:
	default:
	}
	l := &loop{p: p, running: map[string]int{}, avgRun: -1,
		presented: p.announced, presentedVersions: p.announcedVersions, presentedProcess: p.announcedProcess,
		hasRow: p.announcedOK, nextPresence: p.announcedAt.Add(presenceEvery)}
	l.run(ctx, wake, external)
	l.drain(ctx, cancelHandlers)
	close(p.work)
	workers.Wait()
	helpers.Wait()
	return nil
}

// loop is the state of Run's single writing goroutine: it alone claims,
// records results and heartbeats, so each trip is one transaction.
type loop struct {
	p        *Pool
	inflight int
	running  map[string]int // in-flight jobs by type
	pending  []store.Result // results not yet committed
	// claimMore is true while the last claim filled every free slot: more
	// jobs may be ready, so the next trip claims without waiting.
	claimMore     bool
	nextReady     time.Time // when the next pending job becomes ready (zero: none known)
	nextLease     time.Time // when another owner's lease expires (zero: none)
	wakeAt        time.Time // when nextReady and nextLease were read
	nextHeartbeat time.Time
	// presented is the list of types last written to the pools table
	// (hasRow: a row is written), and nextPresence when that row is renewed
	// (see presenceEvery). The renewal is the loop's only periodic write of
	// an idle pool.
	presented         []string
	presentedVersions store.Versions
	presentedProcess  Process
	hasRow            bool
	nextPresence      time.Time
	// blocked is true while ready jobs wait that the last claim could not
	// take: their types are at their concurrency limit, or the next one is
	// on its last attempt and no worker is free for it (see claim). A
	// finishing job wakes the loop; until then it looks again every
	// blockedRecheck instead of waking at the (past) ready time in a busy
	// loop.
	blocked bool
	// careful counts the claims left to make carefully (claimRequest.careful):
	// set when a claim met a job on its last attempt (and maybe gave back
	// the prefetched jobs from it on), so that the next claims stop before
	// such jobs instead of taking and giving back the jobs behind them at
	// every trip. It runs down while the claims meet none.
	stopBeforeLast int
	// enqueued is set when this process enqueued a job since the last trip:
	// there is something to claim, so the trip need not look first.
	enqueued bool
	// rateAt is when a ready job that a rate limit held back at the claim
	// at rateSince may start (zero: none was held back). Until then the
	// loop looks for the ready jobs of the other types, and for the jobs of
	// rate-limited types that became ready since, of a key that may allow
	// them (see look); it wakes at rateAt to claim again, without polling.
	rateAt    time.Time
	rateSince time.Time
	failures  int // consecutive failed trips, for back-off on a sick database
	// avgRun is a moving average of how long jobs take, -1 until the first
	// result: it decides whether to prefetch.
	avgRun time.Duration
	// retime is set by a step of the clock (see now): the timer, set for
	// a time by the clock before it, is set again.
	retime bool
}

// now reads the clock. The loop's periods (the heartbeat, the presence
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
		l.nextPresence = l.nextPresence.Add(step)
		l.wakeAt = l.wakeAt.Add(step)
		l.nextHeartbeat = now
		l.retime = true
	}
	return now
}

func (l *loop) run(ctx context.Context, wake, external <-chan struct{}) {
	p := l.p
	// Reclaim at start-up: leases of a previous life of this host may be
	// long expired.
	l.claimMore = true
	l.nextLease = l.now()
	var timer <-chan time.Time
	var timerAt time.Time
	for {
		// Before trips counts this round: a test that saw the count move
		// knows the loop is past this point.
		p.probes.Answer()
		p.trips.Add(1)
		l.collect()
		if ctx.Err() != nil {
			return
		}
		if err := l.trip(ctx, true); err != nil {
			if ctx.Err() != nil {
				return
			}
			l.failures++
			p.log.ErrorContext(ctx, "pool write failed", "err", err, "failures", l.failures)
		} else {
			l.failures = 0
		}
		if l.claimMore && l.inflight < l.capacity() && l.failures == 0 {
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
		select {
		case <-ctx.Done():
			return
		case r := <-p.results:
			l.add(r)
		case <-wake:
			l.claimMore = true
			l.enqueued = true
		case <-external:
			l.claimMore = true
			l.stopCancelled(ctx) // another process may have asked to cancel a job we run
		case <-timer:
			timer = nil
			l.claimMore = true
		case ch := <-p.probes.Waiting():
			close(ch)
		case <-p.registered:
			l.claimMore = true
		}
		p.idleUntil.Store(0)
	}
}

// wrote reports the outcome of a write transaction to WroteFunc.
func (p *Pool) wrote(err error) {
	if p.cfg.WroteFunc != nil {
		p.cfg.WroteFunc(err)
	}
}

// Probe returns a channel that the pool's loop closes the next time it
// comes round to wait: at once when it is idle, after its transaction when
// it is busy, during the shutdown too, and never while it is wedged (nor
// after Run has returned). A daemon's watchdog uses it to tell a live loop
// from a stuck one. Probe never blocks; it is safe to call from any
// goroutine.
func (p *Pool) Probe() <-chan struct{} { return p.probes.Ask() }

// Busy returns how many workers run a handler now. It is safe to call from
// any goroutine.
func (p *Pool) Busy() int { return int(p.busy.Load()) }

// defaultPrefetchPerWorker and minDefaultPrefetch make the default
// Prefetch, for speed: a trip's transaction costs about ten jobs' rows (on
// SQLite it writes each page it changed to the log, two system calls a
// page, whatever the number of jobs), so the more jobs a trip records and
// claims, the less each pays. BenchmarkDrainCPU, one worker: 280 µs of CPU
// a job at one job a trip, 43 at 17 (the old 16 ahead), 30 at 65; eight
// workers, 32 against 28 µs at 16 and 32 ahead per worker. capacity keeps
// the work the prefetched jobs hold to what 16 jobs per worker held at
// most before.
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
	cfg := l.p.cfg
	if l.avgRun < 0 || l.avgRun >= cfg.PrefetchBelow {
		return cfg.Workers
	}
	prefetch := cfg.Prefetch
	if l.avgRun > 0 {
		work := time.Duration(cfg.Workers*prefetchWorkPerWorker) * cfg.PrefetchBelow
		prefetch = min(prefetch, int(work/l.avgRun))
	}
	return cfg.Workers + prefetch
}

// deadline is when the loop must look again without being woken, and the
// time it was read at.
func (l *loop) deadline() (at, now time.Time) {
	p := l.p
	now = l.now()
	if l.failures > 0 {
		return now.Add(min(time.Duration(l.failures)*100*time.Millisecond, 5*time.Second)), now
	}
	at = now.Add(p.cfg.MaxIdle)
	wants := []time.Time{l.nextLease}
	switch {
	case l.inflight >= l.capacity():
		// With no free slot a ready job cannot be taken: a finishing job
		// wakes the loop instead. Waiting on a past run_at would spin.
	case l.blocked:
		// The same with a free slot but the ready jobs' types at their
		// limit; a job of another type may become ready meanwhile.
		wants = append(wants, now.Add(blockedRecheck), l.rateAt)
	default:
		wants = append(wants, l.nextReady, l.rateAt)
	}
	for _, t := range wants {
		if !t.IsZero() && t.Before(at) {
			at = t
		}
	}
	if l.inflight > 0 && l.nextHeartbeat.Before(at) {
		at = l.nextHeartbeat
	}
	if l.nextPresence.Before(at) {
		at = l.nextPresence
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

func (l *loop) add(r store.Result) {
	l.pending = append(l.pending, r)
	l.inflight--
	l.running[r.Job.Type]--
	if r.Outcome != OutcomeReleased {
		d := r.Finished.Sub(r.Started)
		if l.avgRun < 0 {
			l.avgRun = d
		} else {
			l.avgRun += (d - l.avgRun) / 8
		}
	}
	// A slot is free. The next trip claims, and looks again, only if a job
	// may be waiting for it: the last claim filled every slot (claimMore is
	// set still), ready jobs were blocked, or this result made its job
	// pending again (a retry, a release), which changes when the next job
	// is ready. Otherwise the last claim took every ready job it could see,
	// and a job made ready since wakes the loop by itself (a wake-up, the
	// watch, the timer at nextReady): the trip only records the result. On
	// an idle pool that spares each job a claim and a look at its end,
	// which would hold up the loop when the next job comes.
	if l.blocked || r.Outcome == OutcomeRetry || r.Outcome == OutcomeReleased {
		l.claimMore = true
	}
	l.blocked = false
}

// tripTimeout bounds one trip's transaction: longer than SQLite's wait for
// its write turn (Config.WriteWait, 2m by default), so that only a database
// that stopped answering reaches it.
const tripTimeout = 5 * time.Minute

// trip is one transaction: record results, reclaim expired leases when one is
// due, heartbeat when due, and claim for the free slots when claim is set.
func (l *loop) trip(ctx context.Context, claimJobs bool) error {
	p := l.p
	now := l.now()
	slots := l.capacity() - l.inflight
	doClaim := claimJobs && l.claimMore && slots > 0 && !p.stopping.Load()
	// A stopping pool only records and heartbeats: it takes on no job,
	// not even a reclaimed one.
	doReclaim := !p.stopping.Load() && !l.nextLease.IsZero() && !now.Before(l.nextLease)
	doHeartbeat := l.inflight > 0 && !now.Before(l.nextHeartbeat)
	all, free, limited, versions, rated := p.claimTypes(l.running, max(p.cfg.Workers-l.inflight, 0))
	// The row that tells other processes which types (and versions) this
	// pool runs, and the config its program runs: at the first trip, after
	// a Register or a SetProcess, and renewed while the pool runs.
	process := p.processNow()
	doPresence := !p.stopping.Load() && (!l.hasRow || !slices.Equal(all, l.presented) ||
		!maps.EqualFunc(versions, l.presentedVersions, slices.Equal) || !sameProcess(process, l.presentedProcess) ||
		!now.Before(l.nextPresence))
	enqueued := l.enqueued
	l.enqueued = false
	if doClaim && !enqueued && len(l.pending) == 0 && !doReclaim && !doHeartbeat && !doPresence {
		// Woken with nothing to record: look before taking the write lock,
		// which another process (a second daemon, the CLI) may want.
		if err := l.look(ctx, now, all, versions); err != nil {
			return err
		}
		if l.nextReady.IsZero() || l.nextReady.After(now) {
			l.claimMore = false
			l.blocked = false // what blocked it was taken, by another pool
			doClaim = false
			doReclaim = !l.nextLease.IsZero() && !now.Before(l.nextLease)
		}
	}
	if len(l.pending) == 0 && !doClaim && !doReclaim && !doHeartbeat && !doPresence {
		return nil
	}
	t := store.PoolTx{Owner: p.cfg.Owner, Now: now, Results: l.pending, Reclaim: doReclaim}
	if doHeartbeat {
		t.Heartbeat = now.Add(p.cfg.Lease)
	}
	if doPresence {
		t.Presence = &store.Presence{Types: all, Versions: versions, Process: process, First: !l.hasRow}
	}
	if doClaim {
		p.keys.next()
		t.Claim = &store.Claim{Lease: p.cfg.Lease, N: slots, Types: free, Limited: limited, Versions: versions, Rated: rated,
			Prefetch: max(slots-max(p.cfg.Workers-l.inflight, 0), 0), StopBeforeLast: l.stopBeforeLast > 0}
	}
	// Shutdown does not cancel a trip halfway: a commit cancelled while the
	// server commits it reports an error although it took effect, and its
	// results, recorded again by the next trip, would fail their fences
	// as stale. tripTimeout bounds a trip on a database that stopped
	// answering instead, and so does the stop's budget, ctx's deadline,
	// once the pool stops.
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tripTimeout)
	if p.stopping.Load() {
		tctx, cancel = keepDeadline(ctx, tctx, cancel)
	}
	res, err := p.e.CommitPoolTx(tctx, t)
	cancel()
	p.wrote(err)
	if err != nil {
		return err
	}
	claimed, held, fenced, reclaimedJobs := res.Claimed, res.GaveBack, res.Fenced, res.Reclaimed
	p.commits.Add(1)
	p.report(l.pending, fenced, len(reclaimedJobs))
	if doPresence {
		l.presented, l.presentedVersions, l.presentedProcess, l.hasRow, l.nextPresence = all, versions, process, true, now.Add(presenceEvery)
	}
	for i, r := range l.pending {
		p.logResult(ctx, r, fenced[i])
	}
	l.pending = l.pending[:0]
	for _, r := range reclaimedJobs {
		p.log.WarnContext(ctx, "job lease reclaimed", "job_id", r.ID, "attempt", r.Attempt, "owner", r.Owner, "dead", r.Dead)
	}
	if doHeartbeat || (l.inflight == 0 && len(claimed) > 0) {
		l.nextHeartbeat = now.Add(p.cfg.Lease / 3)
	}
	if doHeartbeat {
		l.stopCancelled(ctx) // in case a wake-up of the watch was missed
	}
	if doClaim {
		l.rateAt, l.rateSince = res.RateWait, now
		if p.rateTypesNow().keyed && l.rateAt.After(now.Add(p.cfg.MaxIdle)) {
			// A job of another key, which its bucket allows, is looked for
			// by look only when it became ready after this claim; one that
			// came with an earlier run_at (a backfill, an enqueue in this
			// claim's millisecond) waits at most MaxIdle, the safety net
			// of every other wake-up too.
			l.rateAt = now.Add(p.cfg.MaxIdle)
		}
		l.claimMore = len(claimed) == slots
		switch {
		case held || slices.ContainsFunc(claimed, (*Job).LastAttempt):
			l.stopBeforeLast = stopBeforeLastClaims
		case l.stopBeforeLast > 0:
			l.stopBeforeLast--
		}
		p.keys.claimed(claimed)
		for _, j := range claimed {
			l.inflight++
			l.running[j.Type]++
			p.work <- j // never blocks: in-flight jobs never outnumber the buffer
		}
	}
	// The jobs are on their way; now look for when to wake next. A claim
	// that filled every free slot comes back at once, so that matters only
	// once a claim falls short; other pools' leases are looked at again at
	// least every wakeEvery. A commit by another process after this read
	// wakes the loop through the watch.
	if doReclaim || (doClaim && (len(claimed) < slots || now.Sub(l.wakeAt) >= wakeEvery)) {
		if err := l.look(ctx, now, all, versions); err != nil {
			return err
		}
		// Short with a job ready: one the claim could not take.
		l.blocked = doClaim && len(claimed) < slots && !l.nextReady.IsZero() && !l.nextReady.After(now)
	} else if doClaim {
		l.blocked = false
	}
	return nil
}

// look reads when the loop must wake next for a job, nextReady, and for
// another owner's lease, nextLease. Until rateAt the ready jobs that rate
// limits held back at the last claim do not count: only the jobs of all's
// unlimited types, and the jobs of rate-limited types that became ready
// after that claim (a retry, a job enqueued since: maybe of another key,
// which its bucket allows), count.
func (l *loop) look(ctx context.Context, now time.Time, all []string, versions store.Versions) error {
	p := l.p
	types := all
	held := now.Before(l.rateAt)
	rates := p.rateTypesNow()
	if held {
		types = rates.unrated
	}
	var err error
	if l.nextReady, l.nextLease, err = p.e.NextWake(ctx, p.cfg.Owner, types, versions); err != nil {
		return err
	}
	l.wakeAt = now
	if held {
		later, err := p.e.NextReadyAfter(ctx, rates.rated, l.rateSince)
		if err != nil {
			return err
		}
		if !later.IsZero() && (l.nextReady.IsZero() || later.Before(l.nextReady)) {
			l.nextReady = later
		}
	}
	return nil
}

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
	l.absent(bg)
	if l.inflight > 0 {
		p.log.InfoContext(bg, "pool stopping", "running", l.inflight, "grace", p.cfg.ShutdownGrace)
	}
	grace := p.clock.After(p.cfg.ShutdownGrace)
	cut := p.cut
	var timer <-chan time.Time
	var timerAt time.Time
	spent := false
	for l.inflight > 0 {
		p.probes.Answer()
		l.collect()
		switch err := bg.Err(); {
		case err != nil && !spent:
			spent = true
			p.log.ErrorContext(bg, "stop timeout spent: results are no longer recorded", "stop_timeout", budget, "running", l.inflight)
		case err != nil:
		default:
			if err := l.trip(bg, false); err != nil {
				l.failures++
				p.log.ErrorContext(bg, "pool write failed", "err", err, "failures", l.failures)
			} else {
				l.failures = 0
			}
		}
		if l.inflight == 0 {
			break
		}
		now := l.now()
		at := l.nextHeartbeat
		if l.failures > 0 {
			at = now.Add(min(time.Duration(l.failures)*100*time.Millisecond, 5*time.Second))
		}
		switch {
		case spent:
			timer = nil // nothing more to write: only the handlers are waited for
		case timer == nil || !at.Equal(timerAt) || l.retime:
			timerAt, l.retime = at, false
			timer = p.clock.After(at.Sub(now))
		}
		select {
		case r := <-p.results:
			l.add(r)
		case <-grace:
			grace = nil
			if !p.hardStop.Load() {
				p.log.WarnContext(bg, "shutdown grace over, cancelling jobs", "running", l.inflight)
			}
			p.hardStop.Store(true)
			cancelHandlers()
		case <-cut:
			// EndGrace sets hardStop itself, before it returns.
			cut = nil
			cancelHandlers()
		case <-timer:
			timer = nil
		case ch := <-p.probes.Waiting():
			close(ch)
		}
	}
	l.flush(bg)
}

// absent deletes the pool's row as it stops claiming: from then on no
// other process should count on it, to run a type or as a running daemon.
// Left behind, the row would count as a running pool's for AliveWithin.
func (l *loop) absent(ctx context.Context) {
	p := l.p
	if !l.hasRow {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, stopWriteTimeout)
	defer cancel()
	if err := p.e.Leave(ctx, p.cfg.Owner); err != nil {
		p.log.WarnContext(ctx, "pool record not removed", "err", err)
		return
	}
	l.presented, l.hasRow = nil, false
}

// flush records pending results during shutdown, retrying a few times on a
// busy database, within ctx's deadline (the stop's): an unrecorded result
// only means the lease expires and the job runs again.
func (l *loop) flush(ctx context.Context) {
	for try := 0; len(l.pending) > 0 && try < 3 && ctx.Err() == nil; try++ {
		tctx, cancel := context.WithTimeout(ctx, stopWriteTimeout)
		err := l.trip(tctx, false)
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
	p.cutOnce.Do(func() {
		// Before the handlers see their contexts cancelled: an error they
		// return from now on is a release, not a failed attempt.
		p.hardStop.Store(true)
		close(p.cut)
	})
}

func (p *Pool) logResult(ctx context.Context, r store.Result, fenced bool) {
	if fenced && r.Outcome == OutcomeDone && !p.log.Enabled(ctx, slog.LevelInfo) {
		return // not worth building the attributes of a line nobody keeps
	}
	j := r.Job
	attrs := []any{"job_id", j.ID, "job_type", j.Type, "key", j.Key, "attempt", j.Attempt, "duration", r.Finished.Sub(r.Started)}
	if !fenced {
		p.log.WarnContext(ctx, "stale result rejected", append(attrs, "outcome", r.Outcome, "err", r.Error)...)
		return
	}
	switch r.Outcome {
	case OutcomeDone:
		if reg, ok := p.lookup(j.Type); ok && reg.tc.LogOutput && r.Output != "" {
			attrs = append(attrs, "output", tail(r.Output, 512))
		}
		p.log.InfoContext(ctx, "job done", attrs...)
	case OutcomeRetry:
		p.log.WarnContext(ctx, "job retry scheduled", append(attrs, "run_at", r.RetryAt, "err", r.Error, "output", tail(r.Output, 512))...)
	case OutcomeDead:
		p.log.ErrorContext(ctx, "job dead", append(attrs, "err", r.Error, "output", tail(r.Output, 512))...)
	case OutcomeReleased:
		p.log.InfoContext(ctx, "job released at shutdown", attrs...)
	case OutcomeCancelled:
		p.log.InfoContext(ctx, "job cancelled", append(attrs, "err", r.Error)...)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (p *Pool) worker(ctx context.Context, name string) {
	for j := range p.work {
		p.results <- p.redact(p.execute(ctx, name, j))
	}
}

// redact masks the secrets of r's output and error with its type's
// RedactFunc, before anything stores or logs them.
func (p *Pool) redact(r store.Result) store.Result {
	reg, ok := p.lookup(r.Job.Type)
	if !ok || reg.tc.RedactFunc == nil {
		return r
	}
	r.Output = reg.tc.RedactFunc(r.Job, r.Output)
	r.Error = reg.tc.RedactFunc(r.Job, r.Error)
	return r
}

// execute runs one attempt and classifies its end.
func (p *Pool) execute(ctx context.Context, worker string, j *Job) store.Result {
	r := store.Result{Job: j, Worker: worker, Started: p.clock.Now()}
	if p.stopping.Load() {
		// Claimed just before shutdown and never started.
		r.Outcome, r.Finished = OutcomeReleased, r.Started
		return r
	}
	if err := p.keys.doomed(j.ID); err != nil {
		// Its rate limit's key function panicked: it cannot be limited.
		r.Outcome, r.Finished, r.Error = OutcomeDead, r.Started, err.Error()
		return r
	}
	// A cancel request (see RequestCancel) cancels ctx with a *CancelledError.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if e := p.stops.start(j, cancel); e != nil {
		// Cancelled while it waited, claimed, for a worker.
		r.Outcome, r.Finished, r.Error = OutcomeCancelled, r.Started, e.Error()
		return r
	}
	defer p.stops.end(j)
	reg, ok := p.lookup(j.Type)
	giveUpAt := reg.tc.giveUpAt(j)
	if ok && !giveUpAt.IsZero() && !r.Started.Before(giveUpAt) {
		// Past its budget: dead instead of started.
		r.Outcome, r.Finished = OutcomeDead, r.Started
		r.Error = (&GaveUpError{After: reg.tc.GiveUpAfter}).Error()
		return r
	}
	var err error
	if !ok {
		err = Permanent(fmt.Errorf("unknown job type %q: no handler registered", j.Type))
	} else {
		p.busy.Add(1)
		r.TimedOut, err = p.call(ctx, reg, j)
		p.busy.Add(-1)
	}
	r.Finished = p.clock.Now()
	r.Output = string(j.Output())
	if err != nil {
		r.Error = err.Error()
	}
	if e, ok := errors.AsType[*CancelledError](context.Cause(ctx)); ok && err != nil {
		r.Outcome, r.Error = OutcomeCancelled, cancelledText(e, r.Error)
		return r
	}
	if err != nil && p.hardStop.Load() {
		r.Outcome = OutcomeReleased
		return r
	}
	outcome, delay := decide(err, j.Attempt, j.MaxAttempts, reg.tc, p.cfg.jitter)
	if re, ok := errors.AsType[*RetryError](err); ok && reg.tc.Rate.Starts > 0 && re.After > 0 {
		p.pauseRate(ctx, reg.tc.Rate, j, r.Finished.Add(re.After))
	}
	r.Outcome = outcome
	r.RetryAt = r.Finished.Add(delay)
	if outcome == OutcomeRetry && !giveUpAt.IsZero() && !r.RetryAt.Before(giveUpAt) {
		// The retry would start when no attempt may.
		r.Outcome = OutcomeDead
		r.Error = (&GaveUpError{After: reg.tc.GiveUpAfter, Err: err}).Error()
	}
	return r
}

// pauseRate pauses the rate limit of j's type, or of its key, until until:
// the remote side asked to slow down. It is written before the attempt's
// result, so that the next claim, which comes after the result, sees it. A
// failure to write it is logged; the job's own retry waits regardless. The
// end of the shutdown grace, which cancels ctx, ends it too: the drain
// waits for the result behind it.
func (p *Pool) pauseRate(ctx context.Context, r Rate, j *Job, until time.Time) {
	l := r.limit()
	var key string
	if r.Key != nil {
		var err error
		if key, err = r.key(j.Payload); err != nil {
			p.log.ErrorContext(ctx, "pause rate limit failed", "job_id", j.ID, "type", j.Type, "err", err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(ctx, tripTimeout)
	defer cancel()
	if err := p.e.PauseRate(ctx, j.Type, key, l.PauseTAT(until)); err != nil {
		p.log.ErrorContext(ctx, "pause rate limit failed", "job_id", j.ID, "type", j.Type, "err", err)
		return
	}
	p.log.InfoContext(ctx, "rate limit paused", "job_id", j.ID, "type", j.Type, "key", key, "until", until)
}

// call runs the handler behind recover, under the type's timeout, and
// reports whether the timeout ended a failed attempt.
func (p *Pool) call(ctx context.Context, reg registered, j *Job) (timedOut bool, err error) {
	if reg.tc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, reg.tc.Timeout, &TimeoutError{Timeout: reg.tc.Timeout})
		defer cancel()
		defer func() { timedOut = err != nil && isTimeout(context.Cause(ctx)) }()
	}
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return false, reg.h.Work(ctx, j)
}

// stopBeforeLastClaims is how many claims after the last one that met a job on its
// last attempt look before they take (see loop.careful).
const stopBeforeLastClaims = 64

// blockedRecheck is how often a blocked loop (see loop.blocked) looks for
// jobs it can take.
const blockedRecheck = 100 * time.Millisecond

// wakeEvery bounds how stale nextLease may grow while every claim fills
// its slots: a lease another pool abandoned is reclaimed within about this
// long plus its expiry, however busy this pool is.
const wakeEvery = time.Second

// checkpointEvery is how often a pool that wrote checkpoints the WAL.
const checkpointEvery = time.Second

// checkpointer is a store that wants a background checkpoint while a pool
// commits: SQLite's (*sqlite.Store), whose write-ahead log is copied back
// into the database file, on a connection of its own, so that the pool's
// own commits rarely reach the autocheckpoint threshold and pay for it.
type checkpointer interface {
	CheckpointPassive(ctx context.Context) error
}

// checkpoint calls c's CheckpointPassive in the background, once a second
// while the loop commits.
func (p *Pool) checkpoint(ctx context.Context, c checkpointer) {
	var seen int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(checkpointEvery):
		}
		if n := p.commits.Load(); n != seen {
			seen = n
			if err := c.CheckpointPassive(ctx); err != nil && ctx.Err() == nil {
				p.log.WarnContext(ctx, "background checkpoint failed", "err", err)
			}
		}
	}
}
