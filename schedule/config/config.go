package config

import "time"

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
	// MaxWorkers bounds workers: each is a goroutine and a slot in buffers
	// sized up front.
	MaxWorkers = 10000
	// MaxCatchUpLimit bounds catch_up_limit.
	MaxCatchUpLimit = 10000
)

// Config is a loaded and fully validated schedules.toml, made by Load or
// Parse. It is not modified after they return it and may be shared between
// goroutines.
type Config struct {
	// File is the path given to Load, or the name given to Parse.
	File string
	// Scheduler holds the [scheduler] table.
	Scheduler Scheduler
	// Tasks holds the [tasks.NAME] tables by NAME.
	Tasks map[string]*Task
	// Schedules holds the [[schedule]] tables in file order.
	Schedules []*Schedule
	// HTTP holds the [http] table: the metrics and health listener.
	HTTP HTTPSettings
	// Pools holds the [pools.NAME] tables, sorted by name: workers of
	// their own for the tasks each names. The tasks of none run in the
	// default pool, of Scheduler.Workers (see PoolOf).
	Pools []*Pool
	// Warnings are what is probably a mistake but loads, such as the cron
	// "0 3 * * * *" (see cron.Expr.Warning): in line order, for -check and
	// the daemon to report.
	Warnings []*Error

	byName map[string]*Schedule
	poolOf map[string]string // task -> the [pools.NAME] that names it
}

// Schedule returns the schedule called name.
func (c *Config) Schedule(name string) (*Schedule, bool) {
	s, ok := c.byName[name]
	return s, ok
}

// Scheduler is the [scheduler] table: settings of the daemon.
type Scheduler struct {
	// DB is the queue file (key db). Default: "scheduler.db". The daemon's
	// -db flag overrides it.
	DB string
	// Workers is how many jobs run at once (key workers). Zero selects the
	// pool's default, GOMAXPROCS.
	Workers int
	// Timezone is the zone of cron expressions of schedules that name none
	// (key timezone, an IANA name). Default: UTC.
	Timezone *time.Location
	// RetainDone is how long done jobs are kept before maintenance purges
	// them (key retain_done). Default: 168h.
	RetainDone time.Duration
	// MaintenanceEvery is the period of lease reclaim and purge (key
	// maintenance_every). Default: 1h.
	MaintenanceEvery time.Duration
	// ShutdownGrace is how long running jobs may finish after the daemon is
	// told to stop (key shutdown_grace). Default: 30s.
	ShutdownGrace time.Duration
	// MisfireGrace is how late an instant may be materialised and still
	// count as on time (key misfire_grace, at least 1s). Instants later
	// than this, after downtime, a pause or a forward clock jump, are
	// missed and handled by the schedule's catch_up policy. Default: 1m.
	MisfireGrace time.Duration
	// Lease is how long a claimed job stays claimed without a heartbeat
	// (key lease, at least 1s); running jobs' leases are extended every
	// third of it. After it a stalled or dead worker's job is reclaimed
	// and runs again. Default: 1m.
	Lease time.Duration
	// StartWithin is the schedules' default start_within (see
	// Schedule.StartWithin). Zero: none.
	StartWithin time.Duration
	// Deadline is the schedules' default deadline (see Schedule.Deadline).
	// Zero: none.
	Deadline time.Duration
	// Notify is the schedules' default notify (see Schedule.Notify).
	Notify []string
}

// Load reads, decodes and validates the configuration file at path. Nothing
// is returned unless everything is valid: a bad file yields a nil Config and
// an Errors listing every problem found.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates a configuration held in data; name is used in
// errors and as Config.File, and a command's program or dir given as a
// relative path is taken from its directory. See Load. Data over MaxSize or nested
// deeper than MaxDepth is refused before it is decoded.
func Parse(name string, data []byte) (*Config, error) {
	if err := checkBounds(name, data); err != nil {
		return nil, Errors{err}
	}
	l := newLoader(name, data)
	cfg := l.load()
	if len(l.errs) > 0 {
		return nil, l.sortedErrors()
	}
	return cfg, nil
}
