package cli

import (
	"context"
	"errors"
	"os"

	"github.com/scheduler-run/scheduler/internal/daemon"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// runDaemon runs the daemon until SIGTERM or SIGINT; SIGHUP reloads.
func (a *app) runDaemon(ctx context.Context, signals <-chan os.Signal) error {
	warnTestClock(a.log, a.clock)
	d, err := daemon.New(ctx, daemon.Config{
		File:      a.o.config,
		Schedules: a.cfg,
		FileData:  a.cfgData,
		DB:        a.dbPath,
		OpenFunc: func(ctx context.Context, cfg engine.Config) (*queue.Client, error) {
			return openDatabase(ctx, a.db, cfg)
		},
		DBNamedOutside: a.o.db != "",
		Listen:         a.o.http,
		TasksFunc:      a.opts.Tasks,
		Version:        a.programVersion(),
		EnvFunc:        getenv,
		Clock:          a.clock,
		Logger:         a.log,
	})
	if ue, ok := errors.AsType[*daemon.UsageError](err); ok {
		if es, ok := errors.AsType[config.Errors](ue.Err); ok {
			printConfigErrors(a.stderr, es, "; the daemon did not start")
			return &usageError{ErrReported}
		}
		return &usageError{ue.Err}
	}
	if err != nil {
		return err
	}
	// The daemon holds the config and its file's bytes from here, and
	// drops the bytes once it has stored them.
	a.cfg, a.cfgData = nil, nil
	return d.Run(ctx, signals)
}
