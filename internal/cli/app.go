package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// app holds what every subcommand needs.
type app struct {
	o   *options
	cfg *config.Config // nil when the subcommand can do without
	// db is a file's path or a PostgreSQL URL, for openDatabase only;
	// messages and logs show dbPath, the URL without its password.
	db     string
	dbPath string
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	clock  clock.Clock
	opts   Options

	// Where cfg came from (lastgood.go).
	cfgData []byte              // the file's bytes; nil when it did not load
	fileErr error               // why it did not load
	running *store.StoredConfig // the daemon's stored config, when cfg is it
	// dbRecovered: db is the [scheduler].db of a file that does not load.
	dbRecovered bool
}

// openQueue opens the database for a subcommand. Only the daemon creates
// a database file, so that a command run as root before the service's
// first start cannot leave a file the service's user cannot open.
func (a *app) openQueue(ctx context.Context, write bool) (*queue.Client, error) {
	if !isDSN(a.db) {
		_, err := os.Stat(a.db)
		switch {
		case write && errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("database %s does not exist yet: start the daemon first (only the daemon creates its database, so that it owns it)", a.dbPath)
		case err != nil:
			return nil, fmt.Errorf("database %s: %w (has the daemon run with this config?)", a.dbPath, err)
		}
	}
	return openDatabase(ctx, a.db, engine.Config{Clock: a.clock, Logger: a.log, ReadOnly: !write, WriteWait: a.o.wait})
}

// schedule returns the named schedule, or a usage error listing them all.
func (a *app) schedule(name string) (*config.Schedule, error) {
	s, ok := a.cfg.Schedule(name)
	if !ok {
		return nil, usagef("%s: no schedule named %q (have: %s)", a.o.config, name, strings.Join(a.scheduleNames(), ", "))
	}
	return s, nil
}

// scheduleNames are the names of the config's schedules, in its order.
func (a *app) scheduleNames() []string {
	var names []string
	for _, s := range a.cfg.Schedules {
		names = append(names, s.Name)
	}
	return names
}

// zone returns the named schedule's zone, or UTC when unknown.
func (a *app) zone(name string) *time.Location {
	if a.cfg != nil {
		if s, ok := a.cfg.Schedule(name); ok {
			return s.Location
		}
		if s, ok := a.cfg.Follower(name); ok {
			return s.Location
		}
	}
	return time.UTC
}

// scheduleZone returns the named schedule's zone, or nil when unknown.
func (a *app) scheduleZone(name string) *time.Location {
	if a.cfg == nil || name == "" {
		return nil
	}
	if s, ok := a.cfg.Schedule(name); ok {
		return s.Location
	}
	return nil
}

// taskNames are the names of cfg's tasks, sorted.
func taskNames(cfg *config.Config) []string {
	return slices.Sorted(maps.Keys(cfg.Tasks))
}

// jobStates are the states of a job, in the order -status prints them.
var jobStates = []queue.State{queue.StatePending, queue.StateRunning, queue.StateDone, queue.StateDead, queue.StateCancelled, queue.StateDiscarded}
