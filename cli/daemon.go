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

	"scheduler/queue"
	"scheduler/schedule"
	"scheduler/tasks"
)

// errForced is returned when a second SIGTERM or SIGINT cut the shutdown short.
var errForced = errors.New("forced exit on second signal: running commands were killed; their jobs run again once their leases expire")

// daemon runs the beat, the worker pool and maintenance until SIGTERM or
// SIGINT, reloading the config on SIGHUP.
func (a *app) daemon(ctx context.Context, signals <-chan os.Signal) error {
	log := a.log
	warnTestClock(log, a.clock)
	notify := newNotifier(getenv)
	watchdog, err := watchdogInterval(getenv)
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
	defer q.Close()
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
	heartbeat, err := queue.NewHeartbeat(q, queue.HeartbeatConfig{Owner: pool.Owner(), Version: a.programVersion(), Clock: a.clock, Logger: log})
	if err == nil {
		err = heartbeat.Record(ctx) // seen alive from READY on
	}
	if err != nil {
		return err
	}

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var wg sync.WaitGroup
	failed := make(chan error, 3)
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
	start("heartbeat", heartbeat.Run)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	log.Info("scheduler started", "db", a.dbPath, "config", a.o.config, "schedules", len(a.cfg.Schedules),
		"tasks", len(a.cfg.Tasks), "workers", pool.Workers(), "owner", pool.Owner(), "pid", os.Getpid())
	notifyOrLog(log, notify, "READY=1\nSTATUS=running "+strconv.Itoa(len(a.cfg.Schedules))+" schedules")

	var dog <-chan time.Time
	if watchdog > 0 {
		dog = a.clock.After(watchdog)
	}
	stopping := false
	beginStop := func(reason string) {
		stopping = true
		log.Info("scheduler stopping", "reason", reason, "grace", sc.ShutdownGrace)
		notifyOrLog(log, notify, "STOPPING=1")
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
					killed := reg.KillRunning()
					log.Error("second signal: exiting now", "signal", sig.String(), "process_groups_killed", killed)
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
		case <-dog:
			// The watchdog is fed only while the database answers.
			pctx, cancel := context.WithTimeout(ctx, watchdog)
			perr := q.Ping(pctx)
			cancel()
			if perr == nil {
				notifyOrLog(log, notify, "WATCHDOG=1")
			} else {
				log.Error("watchdog: database does not answer", "err", perr)
			}
			dog = a.clock.After(watchdog)
		case <-done:
			log.Info("scheduler stopped")
			return runErr
		}
	}
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
	zones := scheduleZones(cfg)
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		spec := taskSpec(t)
		spec.Zones = zones
		h, err := reg.Handler(name, spec)
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
