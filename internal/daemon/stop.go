package daemon

import (
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// ErrForced is what Run returns when a second signal cut the stop short.
var ErrForced = errors.New("forced exit on second signal: running jobs were cut short")

// forcedExitWait bounds how long a forced exit waits for the pools to
// record the jobs they gave back. Only a Go handler that ignores its
// context holds them that long; the process then exits without closing the
// queue, and the leases expire as after a crash.
const forcedExitWait = 10 * time.Second

// stopMargin is what a stop may take beyond shutdown_grace and the longest
// kill_grace, to record results and close the database.
const stopMargin = 15 * time.Second

// stopAfterPools is the part of the stop budget kept for after the pools
// return: the HTTP server's shutdown and closing the database.
const stopAfterPools = httpShutdownWait

// stopBudget is the longest a stop may take: the shutdown grace, cfg's
// longest kill grace, and stopMargin.
func stopBudget(grace time.Duration, cfg *config.Config) time.Duration {
	var kill time.Duration
	for _, t := range cfg.Tasks {
		kill = max(kill, t.KillGrace)
	}
	return grace + kill + stopMargin
}

// beginStop begins the stop: the beat returns at once, /healthz answers
// 503, systemd learns the budget, and stop makes the pools drain.
func (d *Daemon) beginStop(reason string, stop func()) {
	d.stopping = true
	d.live.drop("beat") // it returns at once; the pool drains on
	if d.health != nil {
		d.health.stop()
	}
	// Jobs keep their leases through the drain, so only systemd bounds a
	// stop: extend its timeout to the budget. The shutdown grace is fixed
	// at start; the longest kill_grace is the running config's.
	grace := d.grace
	budget := stopBudget(grace, d.running)
	d.log.Info("scheduler stopping", "reason", reason, "grace", grace, "stop_budget", budget)
	notifyOrLog(d.log, d.notify, "STOPPING=1\nEXTEND_TIMEOUT_USEC="+strconv.FormatInt(budget.Microseconds(), 10))
	d.pools.setStopTimeout(budget - stopAfterPools)
	stop()
}

// forceStop ends every grace and kills every command at once, waits up to
// forcedExitWait for the pools to record what they give back, and returns
// ErrForced.
func (d *Daemon) forceStop(sig os.Signal, done <-chan struct{}) error {
	// Cut first, so a killed command ends in a release, not a failure.
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

// closeQueue closes the database unless a forced exit left a pool
// running, whose results would then fail.
func (d *Daemon) closeQueue() {
	if !d.keepQueue {
		d.q.Close()
	}
}
