package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// reload applies the config file at once; a bad file changes nothing.
// systemd is told of the reload and its end.
func (d *Daemon) reload(ctx context.Context) {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	notifyOrLog(d.log, d.notify, fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", ts.Nano()/1000))
	defer notifyOrLog(d.log, d.notify, "READY=1")
	cfg, data, err := ReadConfig(d.cfg.File)
	if err == nil {
		err = CheckTasks(d.reg, cfg)
	}
	if err != nil {
		d.logRejected(err)
		return
	}
	logConfigWarnings(d.log, cfg)
	if err := d.pools.register(d.reg, cfg); err != nil {
		d.log.Error("reload rejected: keeping the running config", "err", err)
		return
	}
	diff := d.beat.Apply(cfg)
	d.setConfigSHA(data)
	d.warnUntilRestart(cfg, diff)
	if d.met != nil {
		d.met.setConfig(cfg)
	}
	d.running, d.data = cfg, data
	applied, waiting := splitScheduler(diff.Scheduler, d.cfg.DBNamedOutside)
	if len(waiting) > 0 {
		d.log.Warn("reload: [scheduler] settings take effect at the next restart", "keys", waiting)
	}
	// Stored before logging the reload, so an operator command run on
	// seeing the line finds the new config.
	stored := d.storeRunningConfig(ctx)
	d.data = nil
	d.log.Info("config reloaded", reloadAttrs(diff, applied)...)
	if stored != nil {
		d.log.Error("running config not stored: operator commands fall back to the one before", "err", stored)
	}
}

// logRejected logs each problem of a rejected file, with its line.
func (d *Daemon) logRejected(err error) {
	if es, ok := errors.AsType[config.Errors](err); ok {
		for _, e := range es {
			d.log.Error("reload rejected: config error", "file", e.File, "line", e.Line, "err", e.Error())
		}
	} else {
		d.log.Error("reload rejected: config error", "err", err)
	}
	d.log.Error("reload rejected: keeping the running config", "config", d.cfg.File)
}

// setConfigSHA records a new file's config in the pools' rows and the
// beat, loaded now, so it rules from now on (schedule.Agreement). The same
// file reloaded keeps its time. Called after Beat.Apply, so the beat never
// claims the new config's time for the old schedules.
func (d *Daemon) setConfigSHA(data []byte) {
	sha := store.ConfigSHA256(data)
	if sha == d.process.Config {
		return
	}
	d.process.Config, d.process.ConfigAt = sha, d.q.Clock().Now().Truncate(time.Millisecond).UTC()
	d.pools.setProcess(d.process)
	d.beat.SetProcess(d.process)
}

// warnUntilRestart warns that [http], [pools] and [tracing] changes wait for
// a restart.
func (d *Daemon) warnUntilRestart(cfg *config.Config, diff config.Diff) {
	was, now := d.running.HTTP, cfg.HTTP
	if d.cfg.Listen != "" {
		was.Listen, now.Listen = "", "" // Listen overrides it
	}
	if !now.Equal(was) {
		d.log.Warn("reload: [http] takes effect at the next restart", "listen", d.running.HTTP.Listen, "new_listen", cfg.HTTP.Listen)
	}
	if !cfg.Tracing.Equal(d.running.Tracing) {
		d.log.Warn("reload: [tracing] takes effect at the next restart", "tracing", d.running.Tracing, "new_tracing", cfg.Tracing)
	}
	if len(diff.Pools) > 0 {
		// Until then each task stays in its pool; a new one runs in the
		// default pool.
		d.log.Warn("reload: [pools] take effect at the next restart", "pools", diff.Pools, "running", d.pools.poolAttrs())
	}
}

// appliedAtReload are the [scheduler] keys the beat reads from a reloaded
// config. The others are fixed at start.
var appliedAtReload = map[string]bool{"timezone": true, "misfire_grace": true,
	"start_within": true, "deadline": true, "notify": true}

// splitScheduler splits changed [scheduler] keys into those applied now
// and those waiting for a restart. A changed db is moot when the database
// is named outside the file.
func splitScheduler(keys []string, dbNamedOutside bool) (applied, waiting []string) {
	for _, k := range keys {
		switch {
		case appliedAtReload[k]:
			applied = append(applied, k)
		case k == "db" && dbNamedOutside:
		default:
			waiting = append(waiting, k)
		}
	}
	return applied, waiting
}

// reloadAttrs are the "config reloaded" line's changes, or "changes=none".
func reloadAttrs(d config.Diff, scheduler []string) []any {
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
