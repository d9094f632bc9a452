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
	// db is the database, a file's path or a PostgreSQL URL, to open it
	// with (openDatabase); dbPath names it in messages and logs: the path,
	// or the URL without its password (redactDSN). Nothing else shows db.
	db     string
	dbPath string
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	clock  clock.Clock
	opts   Options

	// Where cfg came from (lastgood.go): the file's bytes, nil when it did
	// not load; why it did not; the daemon's stored config when cfg is it.
	cfgData []byte
	fileErr error
	running *store.StoredConfig
	// dbRecovered is set when db is the [scheduler].db of a file that does
	// not load (config.RecoverDB).
	dbRecovered bool
}

// openQueue opens the database for a subcommand. No subcommand creates a
// database file: only the daemon does, so that a command run as root
// before the service's first start cannot leave a database the service's
// user cannot open (a PostgreSQL database is there or not).
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

// schedule returns the schedule name of the config; an unknown name is a
// usage error that lists the names there are.
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

// zone returns the zone of the schedule name, UTC when the config is not
// loaded or does not define it.
func (a *app) zone(name string) *time.Location {
	if a.cfg != nil {
		if s, ok := a.cfg.Schedule(name); ok {
			return s.Location
		}
	}
	return time.UTC
}

// scheduleZone returns the zone of the schedule name in the config, or nil
// when the config has no such schedule (or was not loaded).
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
var jobStates = []queue.State{queue.StatePending, queue.StateRunning, queue.StateDone, queue.StateDead, queue.StateCancelled}
