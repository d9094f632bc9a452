package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/tasks"
)

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

// stopAfterPools is what a stop's budget keeps for after the pools have
// returned: the HTTP server's shutdown, then closing the database. The
// pools' writes end before (see queue.PoolConfig.StopTimeout).
const stopAfterPools = httpShutdownWait

// daemon runs the beat, the worker pools and maintenance until SIGTERM or
// SIGINT, reloading the config on SIGHUP.
func (a *app) daemon(ctx context.Context, signals <-chan os.Signal) error {
	log := a.log
	warnTestClock(log, a.clock)
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
		printConfigErrors(a.stderr, err, "; the daemon did not start")
		return &usageError{ErrReported}
	}
	logConfigWarnings(log, a.cfg)
	if a.o.http != "" && a.cfg.HTTP.Dashboard && !a.cfg.HTTP.Credentials() {
		if public, _ := schedule.CheckListen(a.o.http); public {
			return usagef("-http %s: %v", a.o.http, schedule.ErrDashboardNeedsLogin)
		}
	}

	q, err := openDatabase(ctx, a.db, engine.Config{Clock: a.clock, Logger: log})
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
	// The pool and the beat take their time from the store: on PostgreSQL
	// that is the database server's clock, so that nodes whose own clocks
	// disagree agree on what is due and whose lease expired.
	clk := q.Clock()
	sc := a.cfg.Scheduler
	host, _ := os.Hostname()
	// The pools' rows record the config the daemon runs, and the beat
	// materialises only while it is the newest among the live daemons'
	// (see schedule.Agreement).
	a.process = queue.Process{PID: os.Getpid(), Host: host, Version: a.programVersion(),
		Config: store.ConfigSHA256(a.cfgData), ConfigAt: clk.Now().Truncate(time.Millisecond).UTC()}
	listen := a.listenAddr()
	// Set before the pool and the beat run, which call it; nil when no
	// listener serves the metrics.
	var met *metrics
	// The outcome of the last write of the pools and the beat, for
	// /healthz and the metrics.
	wr := &writes{}
	pc := queue.PoolConfig{
		Workers:          sc.Workers,
		ShutdownGrace:    sc.ShutdownGrace,
		StopTimeout:      stopBudget(sc.ShutdownGrace, a.cfg) - stopAfterPools,
		Lease:            sc.Lease,
		MaintenanceEvery: sc.MaintenanceEvery,
		RetainDone:       sc.RetainDone,
		Process:          a.process,
		Clock:            clk,
		Logger:           log,
		WroteFunc:        wr.record,
	}
	bc := schedule.BeatConfig{Clock: clk, Logger: log, WroteFunc: wr.record, Process: a.process}
	// Set before the pool runs: a job of a schedule that ends dead or done
	// may raise an alarm or a recovery at once (see Beat.JobEnded).
	var beat *schedule.Beat
	pc.FinishedFunc = func(f queue.Finished) {
		if met != nil {
			met.jobFinished(f)
			if f.Notification && (f.Outcome == queue.OutcomeRetry || f.Outcome == queue.OutcomeDead) {
				met.NotificationFailed(f.Type)
			}
		}
		if f.Outcome == queue.OutcomeDead || f.Outcome == queue.OutcomeDone {
			if f.Notification {
				beat.NotificationEnded()
			} else {
				beat.JobEnded(f.Schedule, f.Outcome == queue.OutcomeDead)
			}
		}
	}
	bc.AlarmFunc = func(s, kind string) { met.AlarmRaised(s, kind) }
	if listen != "" {
		pc.ReclaimedFunc = func(n int) { met.leasesReclaimed(n) }
		bc.MaterialisedFunc = func(s string, n int) { met.runsMaterialised(s, n) }
		bc.SkippedFunc = func(s string, r store.SkipReason, n int) { met.runsSkipped(s, r, n) }
	}
	pools, err := newWorkerPools(q, pc, a.cfg)
	if err != nil {
		return err
	}
	if err := pools.register(reg, a.cfg); err != nil {
		return err
	}
	beat, err = schedule.NewBeat(q, a.cfg, bc)
	if err != nil {
		return err
	}
	var health *health
	if listen != "" {
		met = newMetrics(q, a.cfg, a.programVersion(), pools.gauges(), wr, log)
		met.DeadlineFunc = beat.Deadline
		met.AgreementFunc = beat.Agreement
		health = newHealth(a.clock, newLiveness(pools.probes(map[string]func() <-chan struct{}{"beat": beat.Probe})), wr)
		health.agreement = beat.Agreement
		var site http.Handler
		if a.cfg.HTTP.Dashboard {
			h := a.cfg.HTTP
			h.Listen = listen // the name it listens on is one the dashboard answers to
			if site, err = newSite(q, h, beat, clk, log); err != nil {
				return err
			}
		}
		srv, err := listenHTTP(listen, met, health, site, log)
		if err != nil {
			return err
		}
		a.met = met
		if public, _ := schedule.CheckListen(listen); public {
			what := "the metrics"
			if site != nil {
				what = "the metrics, and sees the dashboard's login page"
			}
			log.Warn("http listens beyond the loopback interface: anyone who reaches it reads "+what, "listen", listen)
		}
		healthCtx, stopHealth := context.WithCancel(context.WithoutCancel(ctx))
		var httpWG sync.WaitGroup
		httpWG.Add(2)
		go func() {
			defer httpWG.Done()
			health.run(healthCtx)
		}()
		go func() {
			defer httpWG.Done()
			srv.serve()
		}()
		// Deferred after the queue's close: runs before it, so that no
		// scrape reads a closed queue.
		defer func() {
			srv.shutdown(ctx)
			stopHealth()
			httpWG.Wait()
			a.met = nil
		}()
		paths := "/metrics /healthz"
		if site != nil {
			paths += " / (the dashboard)"
		}
		log.Info("http listening", "listen", srv.Addr().String(), "paths", paths,
			"dashboard_login", site != nil && a.cfg.HTTP.Credentials(), "dashboard_actions", site != nil && a.cfg.HTTP.Actions)
	}
	// Seen alive from READY on, and the write before READY: a database
	// that opens but cannot be written (a read-only mount, an immutable
	// file, a read-only PostgreSQL session, a full disk) fails the start,
	// not every job. A write that fails later fails /healthz until one
	// commits.
	if err := pools.announce(ctx); err != nil {
		return fmt.Errorf("database %s is not writable: %w", a.dbPath, err)
	}

	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var wg sync.WaitGroup
	failed := make(chan error, len(pools.names)+1)
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
	for _, name := range pools.names {
		start(pools.component(name), pools.pools[name].Run)
	}
	start("beat", beat.Run)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// Not fatal: the pool and beat report an unwritable database as they
	// meet it; only the operator commands' fallback (lastgood.go) is lost.
	if err := a.storeRunningConfig(ctx, q); err != nil {
		log.Error("running config not stored: operator commands cannot fall back to it", "err", err)
	}
	log.Info("scheduler started", "db", a.dbPath, "config", a.o.config, "schedules", len(a.cfg.Schedules),
		"tasks", len(a.cfg.Tasks), "workers", pools.workers(), "pools", pools.poolAttrs(), "owner", pools.defaultPool().Owner(), "pid", os.Getpid())
	notifyOrLog(log, notify, "READY=1\nSTATUS=running "+strconv.Itoa(len(a.cfg.Schedules))+" schedules")

	// WATCHDOG=1 means that the pool's loop and the beat come round and
	// the database answers; a wedged loop stops the feeding.
	live := newLiveness(pools.probes(map[string]func() <-chan struct{}{"beat": beat.Probe}))
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
		if health != nil {
			health.stop()
		}
		// Jobs keep their leases through the drain (the pool heartbeats
		// until each result is committed), so the only bound on a stop is
		// systemd's: extend its stop timeout to what the drain may take.
		budget := stopBudget(sc.ShutdownGrace, a.cfg)
		log.Info("scheduler stopping", "reason", reason, "grace", sc.ShutdownGrace, "stop_budget", budget)
		notifyOrLog(log, notify, "STOPPING=1\nEXTEND_TIMEOUT_USEC="+strconv.FormatInt(budget.Microseconds(), 10))
		// The budget of the config running now: a reload may have changed
		// the longest kill_grace since the pools started.
		pools.setStopTimeout(budget - stopAfterPools)
		stop()
	}
	var runErr error
	for {
		select {
		case sig := <-signals:
			switch sig {
			case syscall.SIGHUP:
				if !stopping {
					a.reload(ctx, notify, q, pools, reg, beat)
				}
			default:
				if stopping {
					// Cut first: a command killed below then ends in a
					// release, not a failed attempt.
					pools.cut()
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

// listenAddr is where the daemon serves its metrics: -http, else [http]
// listen of the config; "" for nowhere.
func (a *app) listenAddr() string {
	if a.o.http != "" {
		return a.o.http
	}
	return a.cfg.HTTP.Listen
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
func (a *app) reload(ctx context.Context, notify notifier, q *queue.Client, pools *workerPools, reg *tasks.Registry, beat *schedule.Beat) {
	log := a.log
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	notifyOrLog(log, notify, fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000))
	defer notifyOrLog(log, notify, "READY=1")
	cfg, data, err := readConfig(a.o.config)
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
	logConfigWarnings(log, cfg)
	if err := pools.register(reg, cfg); err != nil {
		log.Error("reload rejected: keeping the running config", "err", err)
		return
	}
	diff := beat.Apply(cfg)
	if sha := store.ConfigSHA256(data); sha != a.process.Config {
		// A new file is a new config: loaded now, it rules from now on
		// (see schedule.Agreement). The same file reloaded keeps its time.
		// After Apply: the beat never claims the new config's time for
		// the old one's schedules.
		a.process.Config, a.process.ConfigAt = sha, q.Clock().Now().Truncate(time.Millisecond).UTC()
		pools.setProcess(a.process)
		beat.SetProcess(a.process)
	}
	was, now := a.cfg.HTTP, cfg.HTTP
	if a.o.http != "" {
		was.Listen, now.Listen = "", "" // -http overrides it
	}
	if !now.Equal(was) {
		log.Warn("reload: [http] takes effect at the next restart", "listen", a.cfg.HTTP.Listen, "new_listen", cfg.HTTP.Listen)
	}
	if len(diff.Pools) > 0 {
		// A pool's goroutines and its row are made at start; until then
		// each task stays in the pool it started in, and a new task runs
		// in the default pool.
		log.Warn("reload: [pools] take effect at the next restart", "pools", diff.Pools, "running", pools.poolAttrs())
	}
	if a.met != nil {
		a.met.setConfig(cfg)
	}
	a.cfg, a.cfgData = cfg, data
	applied, waiting := splitScheduler(diff.Scheduler, a.o)
	if len(waiting) > 0 {
		log.Warn("reload: [scheduler] settings take effect at the next restart", "keys", waiting)
	}
	// Stored before the line that says the reload is done, as at start:
	// an operator command run on seeing it finds the new config.
	stored := a.storeRunningConfig(ctx, q)
	log.Info("config reloaded", reloadAttrs(diff, applied)...)
	if stored != nil {
		log.Error("running config not stored: operator commands fall back to the one before", "err", stored)
	}
}

// appliedAtReload are the [scheduler] keys a reload applies: the beat reads
// them from the new config (the alarm defaults through the schedules that
// take them). The others are fixed at start.
var appliedAtReload = map[string]bool{"timezone": true, "misfire_grace": true,
	"start_within": true, "deadline": true, "notify": true}

// splitScheduler splits the changed [scheduler] keys into those a reload
// applies and those that wait for a restart. A changed db is moot under -db.
func splitScheduler(keys []string, o *options) (applied, waiting []string) {
	for _, k := range keys {
		switch {
		case appliedAtReload[k]:
			applied = append(applied, k)
		case k == "db" && o.db != "":
		default:
			waiting = append(waiting, k)
		}
	}
	return applied, waiting
}

// reloadAttrs are the attributes of the "config reloaded" line: each kind
// of change that happened, with the changed keys of each changed schedule
// and task; "changes=none" when the file changed nothing.
func reloadAttrs(d schedule.Diff, scheduler []string) []any {
	var attrs []any
	add := func(key string, v any, n int) {
		if n > 0 {
			attrs = append(attrs, key, v)
		}
	}
	add("schedules_added", d.Added, len(d.Added))
	add("schedules_changed", d.Fields, len(d.Changed))
	add("schedules_removed", d.Removed, len(d.Removed))
	add("tasks_added", d.TasksAdded, len(d.TasksAdded))
	add("tasks_changed", d.TaskFields, len(d.TasksChanged))
	add("tasks_removed", d.TasksRemoved, len(d.TasksRemoved))
	add("scheduler_changed", scheduler, len(scheduler))
	if len(attrs) == 0 {
		attrs = append(attrs, "changes", "none")
	}
	return attrs
}

// taskSpec is what the tasks package needs of a [tasks.NAME] table.
func taskSpec(t *schedule.Task) tasks.Spec {
	return tasks.Spec{
		Command: t.Command, Env: t.Env, Dir: t.Dir, PermanentExitCodes: t.PermanentExitCodes,
		URL: t.URL, Method: t.Method, Headers: t.Headers, FollowRedirects: t.FollowRedirects, KillGrace: t.KillGrace,
		Limits: taskLimits(t),
	}
}

// taskLimits is what the tasks package needs of a task's resource limits.
func taskLimits(t *schedule.Task) tasks.Limits {
	return tasks.Limits{MemoryMax: t.MemoryMax, CPUTimeMax: t.CPUTimeMax, OpenFilesMax: t.OpenFilesMax, Retryable: t.RetryOverLimit}
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

func taskNames(cfg *schedule.Config) []string {
	return slices.Sorted(maps.Keys(cfg.Tasks))
}
