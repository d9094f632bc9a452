package config

import (
	"time"
	"unsafe"
)

// Defaults of schedules.toml.
const (
	DefaultDB               = "scheduler.db"
	DefaultRetainDone       = 168 * time.Hour
	DefaultMaintenanceEvery = time.Hour
	DefaultShutdownGrace    = 30 * time.Second
	DefaultMisfireGrace     = time.Minute
	DefaultLease            = time.Minute
	DefaultKillGrace        = 10 * time.Second
	DefaultMaxAttempts      = 5
	DefaultBackoff          = 30 * time.Second
	DefaultMaxBackoff       = time.Hour
	DefaultCatchUpLimit     = 100
	// MaxWorkers bounds workers, each a goroutine and a slot in buffers
	// sized up front.
	MaxWorkers = 10000
	// MaxCatchUpLimit bounds catch_up_limit.
	MaxCatchUpLimit = 10000
)

// Config is a validated schedules.toml, made by Load or Parse. It is never
// modified afterwards and may be shared between goroutines.
type Config struct {
	// File is the path given to Load, or the name given to Parse.
	File string
	// Scheduler holds the [scheduler] table.
	Scheduler Scheduler
	// Tasks holds the [tasks.NAME] tables by NAME.
	Tasks map[string]*Task
	// Schedules holds the [[schedule]] tables in file order.
	Schedules []*Schedule
	// HTTP holds the [http] table.
	HTTP HTTPSettings
	// API holds the [api] table.
	API APISettings
	// Pools holds the [pools.NAME] tables, sorted by name. Other tasks
	// run in the default pool (see PoolOf).
	Pools []*Pool
	// Tracing holds the [tracing] table.
	Tracing Tracing
	// Warnings are probable mistakes that load, in line order.
	Warnings []*Error

	// Downstream holds the schedules with after (see Schedule.After), by
	// the upstream schedule they follow, in file order; they are not in
	// Schedules, which the beat ticks.
	Downstream map[string][]*Schedule

	byName map[string]*Schedule
	poolOf map[string]string // task -> its pool
}

// Schedule returns the schedule called name.
func (c *Config) Schedule(name string) (*Schedule, bool) {
	s, ok := c.byName[name]
	return s, ok
}

// Scheduler is the [scheduler] table: settings of the daemon.
type Scheduler struct {
	// DB is the queue file (key db), overridden by -db. Default: DefaultDB.
	DB string
	// Workers is how many jobs run at once (key workers). Default: GOMAXPROCS.
	Workers int
	// Timezone is for schedules that name none (key timezone). Default: UTC.
	Timezone *time.Location
	// RetainDone keeps done jobs this long (key retain_done). Default: 168h.
	RetainDone time.Duration
	// MaintenanceEvery is the period of reclaim and purge (key
	// maintenance_every). Default: 1h.
	MaintenanceEvery time.Duration
	// ShutdownGrace is how long running jobs may finish after a stop (key
	// shutdown_grace). Default: 30s.
	ShutdownGrace time.Duration
	// MisfireGrace is how late an instant may be materialised and still
	// be on time (key misfire_grace, at least 1s); later ones are missed
	// and go to catch_up. Default: 1m.
	MisfireGrace time.Duration
	// Lease is how long a claimed job stays claimed without a heartbeat
	// (key lease, at least 1s); heartbeats come every third of it. After
	// it a stalled worker's job is reclaimed. Default: 1m.
	Lease time.Duration
	// StartWithin is the default Schedule.StartWithin. Zero: none.
	StartWithin time.Duration
	// Deadline is the default Schedule.Deadline. Zero: none.
	Deadline time.Duration
	// Notify is the schedules' default notify (see Schedule.Notify).
	Notify []string
	// Renotify is the default Schedule.Renotify. Zero: none.
	Renotify time.Duration
}

// Load reads, decodes and validates the file at path. A bad file yields a
// nil Config and an Errors listing every problem.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Load of data, name standing for the path: in errors, as
// Config.File and as the base of relative programs and dirs. Data over
// MaxSize or MaxDepth is refused before decoding.
func Parse(name string, data []byte) (*Config, error) {
	if err := checkBounds(name, data); err != nil {
		return nil, Errors{err}
	}
	if cfg := newLoader(name, borrowed(data)).loadInRuns(); cfg != nil {
		return cfg, nil
	}
	l := newLoader(name, string(data))
	cfg := l.load()
	if len(l.errs) > 0 {
		return nil, l.sortedErrors()
	}
	return cfg, nil
}

// borrowed returns data as a string without copying it, for the loading
// of a valid file in parts (loadInRuns), which keeps no part of the
// document: every string a Config holds is a copy (see own), and a file
// with a problem is decoded again from a copy, since errors quote the
// document. A copy would add the file's size to the peak of every start.
// The caller does not modify data during Parse.
func borrowed(data []byte) string {
	return unsafe.String(unsafe.SliceData(data), len(data))
}
