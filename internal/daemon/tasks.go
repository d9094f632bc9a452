package daemon

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/tasks"
)

// NewRegistry returns a task registry with the Go task types register adds.
func NewRegistry(register func(*tasks.Registry) error, clk clock.Clock, log *slog.Logger) (*tasks.Registry, error) {
	reg := tasks.NewRegistry(tasks.Config{Logger: log, Clock: clk})
	if register != nil {
		if err := register(reg); err != nil {
			return nil, fmt.Errorf("register task types: %w", err)
		}
	}
	return reg, nil
}

// CheckTasks builds every task's handler, so that -check, the start and a
// reload reject alike what the pools could not run. The error is a
// config.Errors at each task's table line.
func CheckTasks(reg *tasks.Registry, cfg *config.Config) error {
	var errs config.Errors
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		if _, err := reg.Handler(name, taskSpec(t)); err != nil {
			if se, ok := errors.AsType[*tasks.SpecError](err); ok {
				err = se.Err // the config.Error names the task
			}
			errs = append(errs, &config.Error{File: cfg.File, Line: t.Line(), Table: "task", Job: name, Err: err})
		}
	}
	slices.SortStableFunc(errs, func(a, b *config.Error) int { return cmp.Compare(a.Line, b.Line) })
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// taskSpec is what the tasks package needs of a [tasks.NAME] table.
func taskSpec(t *config.Task) tasks.Spec {
	return tasks.Spec{
		Command: t.Command, Env: t.Env, Dir: t.Dir, PermanentExitCodes: t.PermanentExitCodes,
		URL: t.URL, Method: t.Method, Headers: t.Headers, FollowRedirects: t.FollowRedirects, KillGrace: t.KillGrace,
		Limits: TaskLimits(t),
	}
}

// TaskLimits is what the tasks package needs of a task's resource limits.
func TaskLimits(t *config.Task) tasks.Limits {
	return tasks.Limits{MemoryMax: t.MemoryMax, CPUTimeMax: t.CPUTimeMax, OpenFilesMax: t.OpenFilesMax, Retryable: t.RetryOverLimit}
}

// taskNames are the names of cfg's tasks, sorted.
func taskNames(cfg *config.Config) []string {
	return slices.Sorted(maps.Keys(cfg.Tasks))
}

// scheduleZones maps each schedule to its zone, its command jobs' TZ. A
// job is looked up by schedule name, so queued jobs run in the zone of
// the running config.
func scheduleZones(cfg *config.Config) map[string]string {
	zones := make(map[string]string, len(cfg.Schedules))
	for _, s := range cfg.Schedules {
		zones[s.Name] = s.Location.String()
	}
	return zones
}
