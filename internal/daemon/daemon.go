package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/tasks"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Daemon. File, Schedules, FileData, DB and OpenFunc
// are required; zero values of the others select the defaults shown.
type Config struct {
	// File is the config file, read again at each SIGHUP. Schedules was
	// loaded from FileData, which the daemon stores for operator commands
	// to fall back to.
	File      string
	Schedules *config.Config
	FileData  []byte
	// DB names the database in logs and errors, without a password.
	DB string
	// OpenFunc opens the database with cfg. New calls it once.
	OpenFunc func(ctx context.Context, cfg engine.Config) (*queue.Client, error)
	// DBNamedOutside: the database was named outside the config file, so
	// a reload that changes [scheduler].db changes nothing.
	DBNamedOutside bool
	// Listen, from -http, overrides [http] listen.
	Listen string
	// TasksFunc registers the program's own Go task types. Default: none.
	TasksFunc func(*tasks.Registry) error
	// Version is recorded in the pools' rows and scheduler_build_info.
	Version string
	// EnvFunc reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID, which
	// systemd sets. Default: os.Getenv.
	EnvFunc func(string) string
	Clock   clock.Clock  // Default: clock.Real{}.
	Logger  *slog.Logger // Default: discard.
}

// Daemon is the scheduler's daemon, built by New and run once by Run.
type Daemon struct {
	cfg      Config
	log      *slog.Logger
	notify   notifier
	dogEvery time.Duration // how often the watchdog is fed; 0 for never
	reg      *tasks.Registry
	q        *queue.Client
	pools    *workerPools
	beat     *schedule.Beat
	writes   *writes                  // the outcome of the pools' and the beat's last write
	live     *liveness                // the watchdog's probes of the loops
	tp       *sdktrace.TracerProvider // [tracing]'s, or nil when off

	// The HTTP server: all nil, and listen "", when nothing listens.
	listen string
	met    *metrics
	health *health
	srv    *httpServer
	site   bool // the server serves the dashboard

	// What the daemon runs now; a reload changes them on Run's goroutine.
	running *config.Config
	data    []byte // running's file until stored, then nil: see ready
	// firstPass is closed once the beat's first pass has ended; see
	// limitFirstPass.
	firstPass     chan struct{}
	firstPassOnce sync.Once
	process       queue.Process
	grace         time.Duration // the shutdown grace, fixed at start

	stopping  bool // the first SIGTERM, SIGINT or failure began the stop
	keepQueue bool // a forced exit left a pool running on the queue
}

// New checks what the start needs, opens the database, and builds the
// pools, the beat and, with an address, the metrics and the HTTP server,
// which listens but does not serve before Run. A start refused for
// something the operator gave is a *UsageError. Run closes what New opened.
func New(ctx context.Context, c Config) (*Daemon, error) {
	c = c.withDefaults()
	d := &Daemon{cfg: c, log: c.Logger, notify: newNotifier(c.EnvFunc), writes: &writes{},
		listen: c.Listen, running: c.Schedules, data: c.FileData, grace: c.Schedules.Scheduler.ShutdownGrace}
	// running and data hold them until a reload replaces them.
	d.cfg.Schedules, d.cfg.FileData = nil, nil
	if d.listen == "" {
		d.listen = c.Schedules.HTTP.Listen
	}
	var err error
	if d.dogEvery, err = watchdogInterval(c.EnvFunc); err != nil {
		return nil, &UsageError{Err: err}
	}
	if d.reg, err = NewRegistry(c.TasksFunc, c.Clock, c.Logger); err != nil {
		return nil, err
	}
	if err := CheckTasks(d.reg, c.Schedules); err != nil {
		return nil, &UsageError{Err: err}
	}
	logConfigWarnings(d.log, c.Schedules)
	if err := checkListen(c); err != nil {
		return nil, err
	}
	if d.q, err = c.OpenFunc(ctx, engine.Config{Clock: c.Clock, Logger: d.log}); err != nil {
		return nil, err
	}
	if err := d.build(); err != nil {
		d.q.Close()
		return nil, err
	}
	return d, nil
}

// withDefaults fills in c's defaults.
func (c Config) withDefaults() Config {
	if c.EnvFunc == nil {
		c.EnvFunc = os.Getenv
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// checkListen refuses a non-loopback Listen for a dashboard without a
// login; the config loader checked [http] listen.
func checkListen(c Config) error {
	h := c.Schedules.HTTP
	if c.Listen == "" || !h.Dashboard || h.Credentials() {
		return nil
	}
	if public, _ := config.CheckListen(c.Listen); public {
		return &UsageError{Err: fmt.Errorf("-http %s: %w", c.Listen, config.ErrDashboardNeedsLogin)}
	}
	return nil
}

func (d *Daemon) build() error {
	// The store's clock: on PostgreSQL the server's, so that nodes with
	// skewed clocks agree on what is due and which lease expired.
	clk := d.q.Clock()
	host, _ := os.Hostname()
	// The pools' rows record the config; the beat materialises only while
	// it is the newest among the live daemons' (schedule.Agreement).
	d.process = queue.Process{PID: os.Getpid(), Host: host, Version: d.cfg.Version,
		Config: store.ConfigSHA256(d.data), ConfigAt: clk.Now().Truncate(time.Millisecond).UTC()}
	var err error
	if d.tp, err = newTracerProvider(d.running.Tracing, d.cfg.Version); err != nil {
		return &UsageError{Err: err}
	}
	if d.pools, err = newWorkerPools(d.q, d.poolConfig(clk), d.running); err != nil {
		return err
	}
	if err := d.pools.register(d.reg, d.running); err != nil {
		return err
	}
	if d.beat, err = schedule.NewBeat(d.q, d.running, d.beatConfig(clk)); err != nil {
		return err
	}
	d.live = newLiveness(d.probes())
	if d.listen != "" {
		return d.buildHTTP(clk)
	}
	return nil
}

// poolConfig configures the default pool; the others derive from it.
func (d *Daemon) poolConfig(clk clock.Clock) queue.PoolConfig {
	sc := d.running.Scheduler
	pc := queue.PoolConfig{
		Workers:          sc.Workers,
		ShutdownGrace:    sc.ShutdownGrace,
		StopTimeout:      stopBudget(sc.ShutdownGrace, d.running) - stopAfterPools,
		Lease:            sc.Lease,
		MaintenanceEvery: sc.MaintenanceEvery,
		RetainDone:       sc.RetainDone,
		Process:          d.process,
		Clock:            clk,
		Logger:           d.log,
		WroteFunc:        d.writes.record,
		FinishedFunc:     d.jobFinished,
	}
	if d.listen != "" {
		pc.ReclaimedFunc = func(n int) { d.met.leasesReclaimed(n) }
	}
	pc.TracerProvider = d.tracerProvider()
	return pc
}

// beatConfig configures the beat.
func (d *Daemon) beatConfig(clk clock.Clock) schedule.BeatConfig {
	d.firstPass = make(chan struct{})
	bc := schedule.BeatConfig{Clock: clk, Logger: d.log, WroteFunc: d.writes.record, Process: d.process,
		FirstPassFunc: func() { d.firstPassOnce.Do(func() { close(d.firstPass) }) }}
	if d.listen != "" {
		bc.EventFunc = func(e schedule.Event) { d.met.beatEvent(e) }
	}
	bc.TracerProvider = d.tracerProvider()
	return bc
}

// tracerProvider is [tracing]'s provider, or nil (an untyped nil: no
// tracing) when it is off.
func (d *Daemon) tracerProvider() trace.TracerProvider {
	if d.tp == nil {
		return nil
	}
	return d.tp
}

// jobFinished is the pools' FinishedFunc: it counts the attempt in the
// metrics and tells the beat, whose alarms may want a pass at once.
func (d *Daemon) jobFinished(f queue.Finished) {
	if d.met != nil {
		d.met.jobFinished(f)
		if f.Notification && (f.Outcome == queue.OutcomeRetry || f.Outcome == queue.OutcomeDead) {
			d.met.NotificationFailed(f.Type)
		}
	}
	d.beat.JobFinished(f)
}

func (d *Daemon) probes() map[string]func() <-chan struct{} {
	return d.pools.probes(map[string]func() <-chan struct{}{"beat": d.beat.Probe})
}

// Run serves until SIGTERM or SIGINT, ctx is done or a component fails,
// reloading the config at each SIGHUP; then it stops and closes the
// database. It returns a failed component's error, ErrForced after a
// second SIGTERM or SIGINT, and nil after a requested stop.
func (d *Daemon) Run(ctx context.Context, signals <-chan os.Signal) error {
	defer d.closeQueue()
	// After the pools stopped: their last attempts' spans are exported.
	defer d.stopTracing()
	if d.srv != nil {
		// Runs before closeQueue: no scrape reads a closed queue.
		defer d.serveHTTP(ctx)()
	}
	// Alive from READY on. Writing before READY makes a database that
	// opens but cannot be written (read-only, full) fail the start, not
	// every job. A later failed write fails /healthz until one commits.
	if err := d.pools.announce(ctx); err != nil {
		return fmt.Errorf("database %s is not writable: %w", d.cfg.DB, err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	defer d.limitFirstPass(runCtx)()
	done, failed := d.start(runCtx)
	d.ready(ctx)
	if d.dogEvery > 0 {
		defer d.runWatchdog(ctx)()
	}
	return d.serve(ctx, signals, stop, done, failed)
}

// start runs every pool and the beat until runCtx is done. done closes
// once all have returned; failed carries each early return's error.
func (d *Daemon) start(runCtx context.Context) (done <-chan struct{}, failed <-chan error) {
	var wg sync.WaitGroup
	fail := make(chan error, len(d.pools.names)+1)
	run := func(name string, fn func(context.Context) error) {
		wg.Go(func() {
			if err := fn(runCtx); err != nil {
				fail <- fmt.Errorf("%s: %w", name, err)
			} else if runCtx.Err() == nil {
				fail <- fmt.Errorf("%s stopped unexpectedly", name)
			}
		})
	}
	for _, name := range d.pools.names {
		run(d.pools.component(name), d.pools.pools[name].Run)
	}
	run("beat", d.beat.Run)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	return all, fail
}

// ready stores the running config, logs the start and tells systemd.
func (d *Daemon) ready(ctx context.Context) {
	// Not fatal: only the operator commands' fallback is lost.
	if err := d.storeRunningConfig(ctx); err != nil {
		d.log.Error("running config not stored: operator commands cannot fall back to it", "err", err)
	}
	d.data = nil // stored: the database holds it, the process need not
	// Give the load's freed pages back to the system: the peak of the
	// start is otherwise what the resident memory keeps.
	debug.FreeOSMemory()
	d.log.Info("scheduler started", "db", d.cfg.DB, "config", d.cfg.File, "tracing", d.running.Tracing, "schedules", len(d.running.Schedules),
		"tasks", len(d.running.Tasks), "workers", d.pools.workers(), "pools", d.pools.poolAttrs(),
		"owner", d.pools.defaultPool().Owner(), "pid", os.Getpid())
	notifyOrLog(d.log, d.notify, "READY=1\nSTATUS=running "+strconv.Itoa(len(d.running.Schedules))+" schedules")
}

// serve handles events until every component has returned: SIGHUP
// reloads, the first SIGTERM or SIGINT begins the stop, the second forces
// it. A component's failure begins the stop and is returned.
func (d *Daemon) serve(ctx context.Context, signals <-chan os.Signal, stop func(), done <-chan struct{}, failed <-chan error) error {
	var runErr error
	ctxDone := ctx.Done()
	for {
		select {
		case sig := <-signals:
			switch {
			case sig == syscall.SIGHUP:
				if !d.stopping {
					d.reload(ctx)
				}
			case d.stopping:
				return d.forceStop(sig, done)
			default:
				d.beginStop(sig.String(), stop)
			}
		case <-ctxDone:
			ctxDone = nil // a closed channel is ready for ever
			if !d.stopping {
				d.beginStop("context done", stop)
			}
		case err := <-failed:
			if !d.stopping {
				runErr = err
				d.log.Error("component failed: stopping", "err", err)
				d.beginStop("failure", stop)
			}
		case <-done:
			d.log.Info("scheduler stopped")
			return runErr
		}
	}
}

// runWatchdog feeds systemd's watchdog every d.dogEvery while the loops
// come round and the database answers. stop returns once it has stopped.
func (d *Daemon) runWatchdog(ctx context.Context) (stop func()) {
	dog := &watchdog{clock: d.cfg.Clock, interval: d.dogEvery, live: d.live, ping: d.q.Ping, log: d.log,
		feed: func() { notifyOrLog(d.log, d.notify, "WATCHDOG=1") }}
	dogCtx, stopDog := context.WithCancel(context.WithoutCancel(ctx))
	dogDone := make(chan struct{})
	go func() {
		defer close(dogDone)
		dog.run(dogCtx)
	}()
	return func() {
		stopDog()
		<-dogDone
	}
}
