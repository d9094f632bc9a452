package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"scheduler/internal/clock"
	"scheduler/queue"
	"scheduler/schedule"
	"scheduler/tasks"
)

// testClockEnv names a file whose content shifts the daemon's wall clock
// (see clock.OffsetFile). Black-box tests use it to make the clock jump.
const testClockEnv = "SCHEDULER_TEST_CLOCK_OFFSET_FILE"

func programClock(env func(string) string) (clock.Clock, error) {
	if path := env(testClockEnv); path != "" {
		return &clock.OffsetFile{Path: path}, nil
	}
	return clock.Real{}, nil
}

// errForced is returned when a second SIGTERM or SIGINT cut the shutdown short.
var errForced = errors.New("forced exit on second signal: running jobs were cut short")

// forcedExitWait bounds how long a forced exit waits for the pool to record
// the jobs it gave back. Commands are killed at once; only a Go handler
// that ignores its context can hold the pool that long, and then the
// process exits without closing the queue under the running pool (their
// leases then expire as after a crash).
const forcedExitWait = 10 * time.Second

// stopMargin is what a stop may take beyond shutdown_grace and the longest
// kill_grace: recording the results and closing the database.
const stopMargin = 15 * time.Second

// daemon runs the beat, the worker pool and maintenance until SIGTERM or
// SIGINT, reloading the config on SIGHUP.
func (a *app) daemon(ctx context.Context, signals <-chan os.Signal) error {
	log := a.log
	if _, ok := a.clock.(*clock.OffsetFile); ok {
		log.Warn("test clock in use: the wall clock is shifted by the file in "+testClockEnv, "file", getenv(testClockEnv))
	}
	notify := newNotifier(getenv)
	dogEvery, err := watchdogInterval(getenv)
	if err != nil {
		return usagef("%v", err)
	}
	reg, err := a.registry()
	if err != nil {
		return err
	}
	if err := checkHandlers(reg, a.cfg); err != nil {
		printConfigErrors(a.stderr, err)
		return &usageError{ErrReported}
	}

	q, err := queue.Open(ctx, a.dbPath, queue.Config{Clock: a.clock, Logger: log})
	if err != nil {
		return err
	}
	// Closed only once the pool and the beat have returned: closing it
	// under a running pool fails the results it still has to record.
	closeQueue := true
	defer func() {
		if closeQueue {
			q.Close()
		}
	}()
	// A write before READY: a file that opens but cannot be written (a
	// read-only mount, an immutable file) fails the start, not every job.
	if _, err := q.Reclaim(ctx); err != nil {
		return fmt.Errorf("database %s is not writable: %w", a.dbPath, err)
	}
	sc := a.cfg.Scheduler
	pool, err := queue.NewPool(q, queue.PoolConfig{
		Workers:          sc.Workers,
		ShutdownGrace:    sc.ShutdownGrace,
		Lease:            sc.Lease,
		MaintenanceEvery: sc.MaintenanceEvery,
		RetainDone:       sc.RetainDone,
		Clock:            a.clock,
		Logger:           log,
	})
	if err != nil {
		return err
	}
	if err := registerTasks(pool, reg, a.cfg); err != nil {
		return err
	}
	beat, err := schedule.NewBeat(q, a.cfg, schedule.BeatConfig{Clock: a.clock, Logger: log})
	if err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var wg sync.WaitGroup
	failed := make(chan error, 2)
	start := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(runCtx); err != nil {
				failed <- fmt.Errorf("%s: %w", name, err)
			} else if runCtx.Err() == nil {
				failed <- fmt.Errorf("%s stopped unexpectedly", name)
			}
		}()
	}
	start("pool", pool.Run)
	start("beat", beat.Run)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	log.Info("scheduler started", "db", a.dbPath, "config", a.o.config, "schedules", len(a.cfg.Schedules),
		"tasks", len(a.cfg.Tasks), "workers", pool.Workers(), "owner", pool.Owner(), "pid", os.Getpid())
	notifyOrLog(log, notify, "READY=1\nSTATUS=running "+strconv.Itoa(len(a.cfg.Schedules))+" schedules")

	// WATCHDOG=1 means that the pool's loop and the beat come round and
	// the database answers; a wedged loop stops the feeding.
	live := newLiveness(map[string]func() <-chan struct{}{"pool": pool.Probe, "beat": beat.Probe})
	if dogEvery > 0 {
		dog := &watchdog{clock: a.clock, interval: dogEvery, live: live, ping: q.Ping, log: log,
			feed: func() { notifyOrLog(log, notify, "WATCHDOG=1") }}
		dogCtx, stopDog := context.WithCancel(context.WithoutCancel(ctx))
		dogDone := make(chan struct{})
		go func() {
			defer close(dogDone)
			dog.run(dogCtx)
		}()
		defer func() {
			stopDog()
			<-dogDone
		}()
	}
	stopping := false
	beginStop := func(reason string) {
		stopping = true
		live.drop("beat") // it returns at once; the pool drains on
		// Jobs keep their leases through the drain (the pool heartbeats
		// until each result is committed), so the only bound on a stop is
		// systemd's: extend its stop timeout to what the drain may take.
		budget := stopBudget(sc.ShutdownGrace, a.cfg)
		log.Info("scheduler stopping", "reason", reason, "grace", sc.ShutdownGrace, "stop_budget", budget)
		notifyOrLog(log, notify, "STOPPING=1\nEXTEND_TIMEOUT_USEC="+strconv.FormatInt(budget.Microseconds(), 10))
		stop()
	}
	var runErr error
	for {
		select {
		case sig := <-signals:
			switch sig {
			case syscall.SIGHUP:
				if !stopping {
					a.reload(ctx, notify, pool, reg, beat)
				}
			default:
				if stopping {
					// Cut first: a command killed below then ends in a
					// release, not a failed attempt.
					pool.Cut()
					killed := reg.KillRunning()
					log.Warn("second signal: exiting now", "signal", sig.String(), "process_groups_killed", killed)
					select {
					case <-done:
					case <-a.clock.After(forcedExitWait):
						closeQueue = false
						log.Warn("forced exit: jobs still running are left to their leases")
					}
					return errForced
				}
				beginStop(sig.String())
			}
		case <-ctx.Done():
			if !stopping {
				beginStop("context done")
			}
		case err := <-failed:
			if !stopping {
				runErr = err
				log.Error("component failed: stopping", "err", err)
				beginStop("failure")
			}
		case <-done:
			log.Info("scheduler stopped")
			return runErr
		}
	}
}

// stopBudget is the longest a stop may take: the pool's shutdown grace (a
// reload does not change it), the longest kill grace of a command of cfg,
// and stopMargin.
func stopBudget(grace time.Duration, cfg *schedule.Config) time.Duration {
	var kill time.Duration
	for _, t := range cfg.Tasks {
		kill = max(kill, t.KillGrace)
	}
	return grace + kill + stopMargin
}

func notifyOrLog(log interface{ Warn(string, ...any) }, n notifier, state string) {
	if err := n.notify(state); err != nil {
		log.Warn("sd_notify failed", "err", err)
	}
}

// reload applies a new config atomically: a bad file changes nothing.
func (a *app) reload(ctx context.Context, notify notifier, pool *queue.Pool, reg *tasks.Registry, beat *schedule.Beat) {
	log := a.log
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	notifyOrLog(log, notify, fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000))
	defer notifyOrLog(log, notify, "READY=1")
	cfg, err := schedule.Load(a.o.config)
	if err == nil {
		err = checkHandlers(reg, cfg)
	}
	if err != nil {
		if es, ok := errors.AsType[schedule.ConfigErrors](err); ok {
			for _, e := range es {
				log.Error("reload rejected: config error", "file", e.File, "line", e.Line, "err", e.Error())
			}
		} else {
			log.Error("reload rejected: config error", "err", err)
		}
		log.Error("reload rejected: keeping the running config", "config", a.o.config)
		return
	}
	old := a.cfg
	if cfg.Scheduler.Workers != old.Scheduler.Workers || databasePath(a.o, cfg) != a.dbPath ||
		cfg.Scheduler.ShutdownGrace != old.Scheduler.ShutdownGrace || cfg.Scheduler.Lease != old.Scheduler.Lease ||
		cfg.Scheduler.MaintenanceEvery != old.Scheduler.MaintenanceEvery || cfg.Scheduler.RetainDone != old.Scheduler.RetainDone {
		log.Warn("reload: [scheduler] settings take effect at the next restart")
	}
	if err := registerTasks(pool, reg, cfg); err != nil {
		log.Error("reload rejected: keeping the running config", "err", err)
		return
	}
	diff := beat.Apply(cfg)
	a.cfg = cfg
	log.Info("config reloaded", "added", diff.Added, "changed", diff.Changed, "removed", diff.Removed)
}

// taskSpec is what the tasks package needs of a [tasks.NAME] table.
func taskSpec(t *schedule.Task) tasks.Spec {
	return tasks.Spec{
		Command: t.Command, Env: t.Env, Dir: t.Dir, PermanentExitCodes: t.PermanentExitCodes,
		URL: t.URL, Method: t.Method, Headers: t.Headers, KillGrace: t.KillGrace,
	}
}

// checkHandlers builds every task's handler, so that -check and reload
// reject what registerTasks would.
func checkHandlers(reg *tasks.Registry, cfg *schedule.Config) error {
	var errs schedule.ConfigErrors
	for _, name := range taskNames(cfg) {
		if _, err := reg.Handler(name, taskSpec(cfg.Tasks[name])); err != nil {
			errs = append(errs, &schedule.ConfigError{File: cfg.File, Table: "tasks." + name, Job: name, Err: err})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// registerTasks gives the pool a handler for every task of cfg. Tasks that a
// reload removed keep their handlers until restart, so jobs of theirs already
// queued still run.
func registerTasks(pool *queue.Pool, reg *tasks.Registry, cfg *schedule.Config) error {
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		h, err := reg.Handler(name, taskSpec(t))
		if err != nil {
			return fmt.Errorf("task %s: %w", name, err)
		}
		if err := pool.Register(name, h, t.TypeConfig()); err != nil {
			return err
		}
	}
	return nil
}

func taskNames(cfg *schedule.Config) []string {
	return slices.Sorted(maps.Keys(cfg.Tasks))
}
