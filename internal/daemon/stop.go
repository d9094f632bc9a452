package daemon

import (
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// ErrForced is what Run returns when a second SIGTERM or SIGINT cut the
// stop short.
var ErrForced = errors.New("forced exit on second signal: running jobs were cut short")

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

// stopBudget is the longest a stop may take: the pool's shutdown grace (a
// reload does not change it), the longest kill grace of a command of cfg,
// and stopMargin.
func stopBudget(grace time.Duration, cfg *config.Config) time.Duration {
	var kill time.Duration
	for _, t := range cfg.Tasks {
		kill = max(kill, t.KillGrace)
	}
	return grace + kill + stopMargin
}

// beginStop begins the stop: the beat returns at once, /healthz answers
// 503, systemd learns how long the stop may take, and stop cancels the
// pools' context, after which they stop claiming and drain.
func (d *Daemon) beginStop(reason string, stop func()) {
	d.stopping = true
	d.live.drop("beat") // it returns at once; the pool drains on
	if d.health != nil {
		d.health.stop()
	}
	// Jobs keep their leases through the drain (the pool heartbeats until
	// each result is committed), so the only bound on a stop is systemd's:
	// extend its stop timeout to what the drain may take. The budget is of
	// the config running now, whose longest kill_grace a reload may have
	// changed, with the pools' shutdown grace, fixed at start.
	grace := d.cfg.Schedules.Scheduler.ShutdownGrace
	budget := stopBudget(grace, d.running)
	d.log.Info("scheduler stopping", "reason", reason, "grace", grace, "stop_budget", budget)
	notifyOrLog(d.log, d.notify, "STOPPING=1\nEXTEND_TIMEOUT_USEC="+strconv.FormatInt(budget.Microseconds(), 10))
	d.pools.setStopTimeout(budget - stopAfterPools)
	stop()
}

// forceStop is the second signal's: every pool's grace ends and every
// command is killed at once. It waits for the pools to record the jobs
// they give back, up to forcedExitWait, and returns ErrForced.
func (d *Daemon) forceStop(sig os.Signal, done <-chan struct{}) error {
	// Cut first: a command killed below then ends in a release, not a
	// failed attempt.
	d.pools.cut()
	killed := d.reg.KillRunning()
	d.log.Warn("second signal: exiting now", "signal", sig.String(), "process_groups_killed", killed)
	select {
	case <-done:
	case <-d.cfg.Clock.After(forcedExitWait):
		d.keepQueue = true
		d.log.Warn("forced exit: jobs still running are left to their leases")
	}
	return ErrForced
}

// closeQueue closes the database once the pools and the beat have
// returned: closing it under a running pool fails the results it still has
// to record.
func (d *Daemon) closeQueue() {
	if !d.keepQueue {
		d.q.Close()
	}
}
