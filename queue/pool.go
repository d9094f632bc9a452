package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime"
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
	// (the loop's transactions and periodic maintenance), from the pool's
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
	// loop.readWakes), replaced by Register as the lists are.
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
	rounds   atomic.Int64 // rounds of the loop, for tests of idleness
	commits  atomic.Int64 // write transactions of the loop, for the checkpointer
	// idleUntil is, while the running loop waits with no job in flight,
	// the instant (Unix nanoseconds) its timer wakes it; zero otherwise.
	// Tests that drive a fake clock from one of the loop's wake-ups to the
	// next read it: past the clock's now, the loop has done what now asked
	// of it.
	idleUntil atomic.Int64

	graceEnded  chan struct{} // closed by EndGrace
	stopTimeout atomic.Int64  // StopTimeout, or what SetStopTimeout set
	endGrace    sync.Once
	probes      liveness.Probes // see Probe
	stops       stops           // running attempts' contexts, for cancel requests
	keys        *rateKeys       // the keys of keyed rate limits, for claims

	// steps notices the steps of the clock's wall clock between the
	// readings of Announce and Run's loop (see loop.now).
	steps clock.Steps

	// announced is the row Announce wrote to the pools table; Run's loop
	// takes it from there.
	announced rowState
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
	cfg, err := cfg.withDefaults(q)
	if err != nil {
		return nil, fmt.Errorf("new pool: %w", err)
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
		graceEnded: make(chan struct{}),
		probes:     liveness.New(),
	}
	p.keys = newRateKeys(p.log)
	p.stopTimeout.Store(int64(cfg.StopTimeout))
	return p, nil
}

// withDefaults returns cfg checked, with its zero values replaced by the
// defaults, those of the clock and logger by q's.
func (cfg PoolConfig) withDefaults(q *Client) (PoolConfig, error) {
	if cfg.Workers < 0 || cfg.PrefetchBelow < 0 || cfg.Lease < 0 || cfg.ShutdownGrace < 0 || cfg.StopTimeout < 0 || cfg.WatchInterval < 0 || cfg.MaxIdle < 0 || cfg.RetainDone < 0 {
		return cfg, errors.New("negative setting")
	}
	orDefault(&cfg.Workers, runtime.GOMAXPROCS(0))
	switch {
	case cfg.Prefetch == 0:
		cfg.Prefetch = max(defaultPrefetchPerWorker*cfg.Workers, minDefaultPrefetch)
	case cfg.Prefetch < 0:
		cfg.Prefetch = 0
	}
	orDefault(&cfg.PrefetchBelow, 5*time.Millisecond)
	orDefault(&cfg.Lease, time.Minute)
	if cfg.Lease < MinLease {
		return cfg, fmt.Errorf("lease %s is shorter than %s: the pool heartbeats every third of it", cfg.Lease, MinLease)
	}
	orDefault(&cfg.ShutdownGrace, 30*time.Second)
	orDefault(&cfg.StopTimeout, cfg.ShutdownGrace+30*time.Second)
	orDefault(&cfg.WatchInterval, 2*time.Second)
	orDefault(&cfg.MaxIdle, 30*time.Second)
	orDefault(&cfg.MaintenanceEvery, time.Hour)
	orDefault(&cfg.RetainDone, 7*24*time.Hour)
	orDefault(&cfg.Process.PID, os.Getpid())
	if cfg.Process.Host == "" {
		cfg.Process.Host, _ = os.Hostname()
	}
	orDefault(&cfg.Process.Version, "dev")
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
	return cfg, nil
}

// orDefault sets *v to def when it is zero.
func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
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
func (p *Pool) claimTypes(running map[string]int, idle int) claimTypes {
	p.mu.RLock()
	defer p.mu.RUnlock()
	var rated []store.RatedClaim
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
	return claimTypes{all: p.allTypes, free: p.freeTypes, limited: p.limitsLocked(running), versions: p.versions, rated: rated}
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

	// Types registered before Run are claimed from the first turn on.
	select {
	case <-p.registered:
	default:
	}
	l := &loop{p: p, running: map[string]int{}, claims: claimState{avgRun: -1}, row: p.announced}
	l.run(ctx, wake, external)
	l.drain(ctx, cancelHandlers)
	close(p.work)
	workers.Wait()
	helpers.Wait()
	return nil
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
