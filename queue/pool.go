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

	"go.opentelemetry.io/otel/trace"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/liveness"
	"github.com/scheduler-run/scheduler/queue/store"
)

// PoolConfig configures a Pool. Zero values select the defaults shown.
type PoolConfig struct {
	Workers int // Jobs run at once. Default: GOMAXPROCS.
	// Prefetch is how many jobs the pool may claim beyond its free
	// workers, so a worker gets its next job at once in larger
	// transactions: only while jobs are short (an average under
	// PrefetchBelow), and at most 16 × PrefetchBelow of expected work per
	// worker. A job on its last attempt is never prefetched: a crash spends
	// every claimed job's attempt. Default: 32 × Workers, at least 64;
	// negative disables.
	Prefetch      int
	PrefetchBelow time.Duration // Average run time under which to prefetch. Default: 5ms.
	// Lease is how long a claim holds a job without a heartbeat. The pool
	// heartbeats every third of it until each result commits, so it need
	// not outlast ShutdownGrace. At least MinLease. Default: 1m.
	Lease         time.Duration
	ShutdownGrace time.Duration // Time running jobs get after Run's ctx is done. Default: 30s.
	// StopTimeout bounds the stop's writes (row, heartbeats, results) from
	// when Run's ctx is done, so Run returns within it unless a handler
	// outlives it. Past it an unrecorded result is lost and its job runs
	// again once its lease expires, as after a crash. See
	// Pool.SetStopTimeout. Default: ShutdownGrace + 30s.
	StopTimeout time.Duration
	// WatchInterval is how often the pool polls PRAGMA data_version for
	// other processes' writes where it cannot watch the file with inotify
	// (not Linux, or at inotify's limits, logged once). Default: 2s.
	WatchInterval time.Duration
	// MaxIdle bounds an idle pool's sleep between looks, and is the
	// watch's safety read period. Default: 30s.
	MaxIdle time.Duration
	// MaintenanceEvery is the period of reclaim and purge. Default: 1h.
	// Negative disables it; reclaim still runs at start-up and when
	// another pool's lease expires.
	MaintenanceEvery time.Duration
	RetainDone       time.Duration // How long done jobs are kept. Default: 168h.
	Owner            string        // Names the pool in leases and attempts. Default: host:pid:random.
	Process          Process       // The pool's program, in its row (see Client.Pools).
	Clock            clock.Clock   // Default: the Client's clock.
	Logger           *slog.Logger  // Default: the Client's logger.

	// FinishedFunc, when set, gets each recorded result whose fence held,
	// from the pool's loop: it must not block.
	FinishedFunc func(Finished)
	// ReclaimedFunc, when set, gets the count of expired leases each
	// commit took back, from the pool's goroutines: it must not block.
	ReclaimedFunc func(n int)
	// WroteFunc, when set, gets each write transaction's outcome (loop or
	// Announce; the row is renewed every 30s at least), from the calling
	// goroutine: it must not block.
	WroteFunc func(err error)
	// TracerProvider, when set, makes each attempt a span, the child of
	// the job's Trace, in the handler's ctx (see Job.Trace). Default: nil,
	// no span work.
	TracerProvider trace.TracerProvider

	jitter func(time.Duration) time.Duration // tests fix the backoff jitter
}

// MinLease is the shortest lease a Pool accepts: a heartbeat, every third of
// it, must commit in time behind the file's other writers.
const MinLease = time.Second

// Pool runs a Client's jobs on a bounded number of goroutines. Register
// handlers, then Run; Register is safe during Run.
type Pool struct {
	q     *Client
	e     store.PoolProtocol // q's engine
	cfg   PoolConfig
	clock clock.Clock
	log   *slog.Logger

	mu       sync.RWMutex
	handlers map[string]registered
	// allTypes are the handled types, sorted; freeTypes those without a
	// concurrency limit; versions those accepting other than [1], or nil;
	// rates allTypes split by rate limit. Register replaces them, never
	// changing them in place: they go to the store as they are.
	allTypes  []string
	freeTypes []string
	versions  store.Versions
	rates     rateTypes
	process   Process // what the pool's row says of its program

	registered chan struct{} // a Register or SetProcess during Run: claim, write the row, at once

	work     chan *Job
	results  chan store.Result
	stopping atomic.Bool // no new handler starts
	hardStop atomic.Bool // handlers' contexts were cancelled by shutdown
	running  atomic.Bool
	busy     atomic.Int64 // handlers running now (see Busy)
	rounds   atomic.Int64 // rounds of the loop, for tests of idleness
	commits  atomic.Int64 // write transactions of the loop, for the checkpointer
	// idleUntil is the Unix ns instant the idle loop's timer wakes it, or
	// zero: tests driving a fake clock wait until it is past now.
	idleUntil atomic.Int64

	graceEnded  chan struct{} // closed by EndGrace
	stopTimeout atomic.Int64  // StopTimeout, or what SetStopTimeout set
	endGrace    sync.Once
	probes      liveness.Probes // see Probe
	stops       stops           // running attempts' contexts, for cancel requests
	keys        *rateKeys       // the keys of keyed rate limits, for claims
	steps       clock.Steps     // wall-clock steps since Announce (see loop.now)
	announced   rowState        // the row Announce wrote
	lives       *lives          // running attempts' output, for the loop to store
	tracer      trace.Tracer    // from PoolConfig.TracerProvider, or nil
}

type registered struct {
	h   Handler
	tc  TypeConfig
	key func(id int64, payload json.RawMessage) (string, error) // a keyed limit's, or nil (see rateKeys)
}

// NewPool returns a Pool that runs q's jobs.
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
		lives:      newLives(),
	}
	p.keys = newRateKeys(p.log)
	if cfg.TracerProvider != nil {
		p.tracer = cfg.TracerProvider.Tracer(tracerName)
	}
	p.stopTimeout.Store(int64(cfg.StopTimeout))
	return p, nil
}

// withDefaults returns cfg checked, zero values defaulted, the clock and
// logger from q.
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

func orDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// SetStopTimeout replaces StopTimeout for a stop not yet begun: a daemon
// gives pools what is left of its stop budget. Safe from any goroutine.
func (p *Pool) SetStopTimeout(d time.Duration) {
	if d > 0 {
		p.stopTimeout.Store(int64(d))
	}
}

// Workers returns how many jobs the pool runs at once.
func (p *Pool) Workers() int { return p.cfg.Workers }

// Owner returns the token that marks this pool's leases.
func (p *Pool) Owner() string { return p.cfg.Owner }

// Register sets a job type's handler and policy; running jobs keep the old. A
// pool claims only registered types: others stay pending for a pool that has
// them (see Client.Unhandled). Registered during Run, a type is claimed at
// once.
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

// SetProcess replaces what the pool's row says of its program, such as its
// config; a zero PID, Host or Version keeps the pool's. A running pool
// rewrites its row at once. Safe from any goroutine.
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

func (p *Pool) processNow() Process {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.process
}

func sameProcess(a, b Process) bool {
	return a.PID == b.PID && a.Host == b.Host && a.Version == b.Version && a.Config == b.Config && a.ConfigAt.Equal(b.ConfigAt)
}

// acceptedVersions returns accepts sorted, [1] when empty; each must be at
// least 1, once.
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

// claimTypes returns a claim's types: all handled; those without limit;
// starts left per concurrency-limited type without rate; versions; and
// rate-limited types with room for their limit and idle workers (never
// prefetched). The caller must not change them.
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

// rateTypes are a pool's types split by rate limit, and whether one is keyed.
type rateTypes struct {
	unrated, rated []string
	keyed          bool
}

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

// Run claims and runs jobs until ctx is done, then stops claiming, gives
// running jobs ShutdownGrace, cancels them and gives their attempts back. It
// returns once all its goroutines have. A Pool runs once.
func (p *Pool) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("pool: Run called twice")
	}
	wake, unsubscribe := p.e.Subscribe()
	defer unsubscribe()

	// Handlers outlive ctx by the shutdown grace and are cancelled apart.
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
	// The watch's first reading must precede the first claim, or a commit
	// between them goes unnoticed until MaxIdle.
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

func (p *Pool) wrote(err error) {
	if p.cfg.WroteFunc != nil {
		p.cfg.WroteFunc(err)
	}
}

// Probe returns a channel the loop closes when it next comes round to wait:
// at once when idle, after its transaction when busy, in shutdown too; never
// while wedged or after Run: a watchdog tells a stuck loop so. Probe never
// blocks; safe from any goroutine.
func (p *Pool) Probe() <-chan struct{} { return p.probes.Ask() }

// Busy returns how many workers run a handler now. Safe from any goroutine.
func (p *Pool) Busy() int { return int(p.busy.Load()) }
