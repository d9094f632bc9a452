package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/tasks"
)

// Config configures a Daemon. File, Schedules, FileData, DB and OpenFunc
// are required; zero values of the others select the defaults shown.
type Config struct {
	// File is the config file, read again at each SIGHUP. Schedules is
	// what it held when the command read it, and FileData the bytes
	// Schedules was loaded from: the daemon stores them in the database as
	// the config it runs, for the operator commands to fall back to.
	File      string
	Schedules *config.Config
	FileData  []byte
	// DB names the database in logs and errors: a file's path, or a URL
	// without its password.
	DB string
	// OpenFunc opens the database with cfg. New calls it once.
	OpenFunc func(ctx context.Context, cfg engine.Config) (*queue.Client, error)
	// DBNamedOutside is set when the database was named outside the
	// config file: a reload that changes [scheduler].db then changes
	// nothing.
	DBNamedOutside bool
	// Listen, when set, is where the HTTP server listens, over [http]
	// listen of the config. The command's -http gives it.
	Listen string
	// TasksFunc registers the program's own Go task types next to the
	// command and http ones. Default: none.
	TasksFunc func(*tasks.Registry) error
	// Version is the program's version, recorded in the pools' rows and in
	// scheduler_build_info.
	Version string
	// EnvFunc reads what systemd sets in the environment: NOTIFY_SOCKET,
	// WATCHDOG_USEC and WATCHDOG_PID. Default: os.Getenv.
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
	writes   *writes   // the outcome of the pools' and the beat's last write
	live     *liveness // the watchdog's probes of the loops

	// The HTTP server and what it serves: all nil, and listen "", when
	// nothing listens.
	listen string
	met    *metrics
	health *health
	srv    *httpServer
	site   bool // the server serves the dashboard

	// What the daemon runs now: the config, its bytes, and what the pools'
	// rows say of the daemon. A reload changes them, on Run's goroutine.
	running *config.Config
	data    []byte
	process queue.Process

	stopping  bool // the first SIGTERM, SIGINT or failure began the stop
	keepQueue bool // a forced exit left a pool running on the queue
}

// New builds the daemon of c: it checks what the start needs, opens the
// database, and makes the worker pools, the beat and, when an address is
// given, the metrics and the HTTP server, which listens but does not serve
// before Run. A start refused for something the operator gave is a
// *UsageError. Nothing runs yet; Run then closes what New opened.
func New(ctx context.Context, c Config) (*Daemon, error) {
	c = c.withDefaults()
	d := &Daemon{cfg: c, log: c.Logger, notify: newNotifier(c.EnvFunc), writes: &writes{},
		listen: c.Listen, running: c.Schedules, data: c.FileData}
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

// withDefaults is c with the defaults of its zero values filled in.
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

// checkListen refuses a Listen beyond the loopback interface for a
// dashboard that needs no login: [http] listen was checked as the config
// loaded.
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

// build makes the pools, the beat and, when the daemon listens, the
// metrics and the HTTP server.
func (d *Daemon) build() error {
	// The pools and the beat take their time from the store: on
	// PostgreSQL that is the database server's clock, so that nodes whose
	// own clocks disagree agree on what is due and whose lease expired.
	clk := d.q.Clock()
	host, _ := os.Hostname()
	// The pools' rows record the config the daemon runs, and the beat
	// materialises only while it is the newest among the live daemons'
	// (see schedule.Agreement).
	d.process = queue.Process{PID: os.Getpid(), Host: host, Version: d.cfg.Version,
		Config: store.ConfigSHA256(d.data), ConfigAt: clk.Now().Truncate(time.Millisecond).UTC()}
	var err error
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

// poolConfig configures the default pool; the others derive theirs from it
// (see newWorkerPools).
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
	return pc
}

// beatConfig configures the beat. The metrics it feeds exist before it
// runs.
func (d *Daemon) beatConfig(clk clock.Clock) schedule.BeatConfig {
	bc := schedule.BeatConfig{Clock: clk, Logger: d.log, WroteFunc: d.writes.record, Process: d.process}
	if d.listen != "" {
		bc.EventFunc = func(e schedule.Event) { d.met.beatEvent(e) }
	}
	return bc
}

// jobFinished is the pools' FinishedFunc: it counts the attempt's end in
// the metrics, and tells the beat, whose alarms may call for a pass at once
// (see schedule.Beat.JobFinished).
func (d *Daemon) jobFinished(f queue.Finished) {
	if d.met != nil {
		d.met.jobFinished(f)
		if f.Notification && (f.Outcome == queue.OutcomeRetry || f.Outcome == queue.OutcomeDead) {
			d.met.NotificationFailed(f.Type)
		}
	}
	d.beat.JobFinished(f)
}

// probes are the liveness probes of the pools' loops and the beat's.
func (d *Daemon) probes() map[string]func() <-chan struct{} {
	return d.pools.probes(map[string]func() <-chan struct{}{"beat": d.beat.Probe})
}

// Run serves until SIGTERM or SIGINT arrives on signals, ctx is done or a
// component fails, reloading the config at each SIGHUP; then it stops (see
// beginStop) and closes the database. A second SIGTERM or SIGINT cuts the
// stop short: Run then returns ErrForced. It returns the error of a
// component that failed, and nil after a stop that was asked for.
func (d *Daemon) Run(ctx context.Context, signals <-chan os.Signal) error {
	defer d.closeQueue()
	if d.srv != nil {
		// Deferred after the queue's close: runs before it, so that no
		// scrape reads a closed queue.
		defer d.serveHTTP(ctx)()
	}
	// Seen alive from READY on, and the write before READY: a database
	// that opens but cannot be written (a read-only mount, an immutable
	// file, a read-only PostgreSQL session, a full disk) fails the start,
	// not every job. A write that fails later fails /healthz until one
	// commits.
	if err := d.pools.announce(ctx); err != nil {
		return fmt.Errorf("database %s is not writable: %w", d.cfg.DB, err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done, failed := d.start(runCtx)
	d.ready(ctx)
	if d.dogEvery > 0 {
		defer d.runWatchdog(ctx)()
	}
	return d.serve(ctx, signals, stop, done, failed)
}

// start runs every pool and the beat until runCtx is done. done is closed
// once all have returned; failed carries the error of each that returned
// before.
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

// ready stores the config the daemon runs, logs the start and tells
// systemd that the daemon is ready.
func (d *Daemon) ready(ctx context.Context) {
	// Not fatal: the pool and beat report an unwritable database as they
	// meet it; only the operator commands' fallback to it is lost.
	if err := d.storeRunningConfig(ctx); err != nil {
		d.log.Error("running config not stored: operator commands cannot fall back to it", "err", err)
	}
	d.log.Info("scheduler started", "db", d.cfg.DB, "config", d.cfg.File, "schedules", len(d.running.Schedules),
		"tasks", len(d.running.Tasks), "workers", d.pools.workers(), "pools", d.pools.poolAttrs(),
		"owner", d.pools.defaultPool().Owner(), "pid", os.Getpid())
	notifyOrLog(d.log, d.notify, "READY=1\nSTATUS=running "+strconv.Itoa(len(d.running.Schedules))+" schedules")
}

// serve handles what arrives until every component has returned: a SIGHUP
// reloads, the first SIGTERM or SIGINT begins the stop and the second
// forces it. A component's failure begins the stop too, and is what serve
// returns.
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
// come round and the database answers. The function it returns stops it
// and returns once it has.
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
