package schedule

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/scheduler-run/scheduler/queue"
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
	HTTP HTTP
	// Pools holds the [pools.NAME] tables, sorted by name: workers of
	// their own for the tasks each names. The tasks of none run in the
	// default pool, of Scheduler.Workers (see PoolOf).
	Pools []*Pool
	// Warnings are what is probably a mistake but loads, such as the cron
	// "0 3 * * * *" (see Spec): in line order, for -check and the daemon to
	// report.
	Warnings []*ConfigError

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

// Task is a [tasks.NAME] table: a job type and its policy. A task runs a
// command, calls a URL, or neither when a Go handler is registered under its
// name; the tasks package executes them.
type Task struct {
	// Name is the table's NAME, the job type of its jobs.
	Name string
	// Command is the program and its arguments (key command), each a
	// text/template over the job's payload.
	Command []string
	// Env is added to a command's environment (key env).
	Env map[string]string
	// Dir is a command's working directory (key dir).
	Dir string
	// URL receives the job's payload (key url).
	URL string
	// Method is the URL's request method (key method). Empty selects the
	// handler's default, POST.
	Method string
	// Headers are added to each request to URL (key headers).
	Headers map[string]string
	// FollowRedirects lets requests to URL follow redirects (key
	// follow_redirects). Default: false, a 3xx response fails the job.
	FollowRedirects bool
	// Timeout bounds one attempt (key timeout). Zero means none; the
	// handler of a URL task then applies its own default, 1m.
	Timeout time.Duration
	// MaxAttempts is how often a job runs before it is dead (key
	// max_attempts). Default: 5.
	MaxAttempts int
	// Backoff is the delay before the first retry, doubling after, with
	// jitter (key backoff). Default: 30s.
	Backoff time.Duration
	// MaxBackoff caps the retry delay (key max_backoff). Default: 1h.
	MaxBackoff time.Duration
	// Concurrency is how many jobs of this task run at once (key
	// concurrency). Zero means no limit beyond the workers.
	Concurrency int
	// PermanentExitCodes are a command's exit codes (1-255) that mean "do
	// not retry" (key permanent_exit_codes).
	PermanentExitCodes []int
	// Priority orders ready jobs: higher runs first (key priority).
	// Default: 0.
	Priority int
	// KillGrace is how long a command's process group has between SIGTERM
	// and SIGKILL at a timeout or shutdown (key kill_grace). Default: 10s.
	KillGrace time.Duration
	// LogOutput logs the tail of a successful run's output at info level
	// (key log_output). Default: false; failed runs always log theirs.
	LogOutput bool
	// MemoryMax limits the private writable memory of each process of a
	// command, in bytes (key memory_max, such as "512MiB"); see
	// tasks.Limits. Zero: no limit.
	MemoryMax int64
	// CPUTimeMax limits the CPU time of each process of a command (key
	// cpu_time_max, whole seconds); see tasks.Limits. Zero: no limit.
	CPUTimeMax time.Duration
	// OpenFilesMax limits the file descriptors each process of a command
	// may hold (key open_files_max); see tasks.Limits. Zero: the daemon's
	// own limit.
	OpenFilesMax int
	// RetryOverLimit makes an attempt that exceeded MemoryMax or
	// CPUTimeMax an ordinary failed attempt, retried, instead of failing the
	// job permanently (key retry_over_limit). Default: false.
	RetryOverLimit bool
	// GiveUpAfter is the total budget of each job, from its instant or, for
	// a job of no instant, its enqueue, or from an operator's later retry
	// (key give_up_after); see queue.TypeConfig.GiveUpAfter. Zero: none.
	GiveUpAfter time.Duration
	// Redact names the payload fields shown as "[redacted]" wherever a job
	// is shown to a person (key redact): a top-level key ("token"), or a
	// key nested in objects, with dots ("card.number"), crossing arrays.
	// The command or URL still receives the real values. See Redactor.
	Redact []string
	// RedactOutput are regular expressions (RE2 syntax) whose matches in
	// an attempt's output and error are replaced with "[redacted]" before
	// they are stored or logged (key redact_output). See Redactor.
	RedactOutput []string
	// Version is the version of the payload format of the jobs this
	// process enqueues for the task (key version), at least 1: a worker
	// runs them only if it accepts that version. Default: 1.
	Version int
	// Accepts are the payload versions of the task's jobs that this
	// process's worker runs (key accepts), each at least 1, none twice; a
	// job of another version stays pending for a worker that accepts it.
	// Default: [Version].
	Accepts []int

	// Rate and RatePer limit how often the task's jobs start, across every
	// process and node on the database: Rate starts per RatePer (key rate,
	// "10/1m"). Zero Rate: no limit. See queue.Rate.
	Rate    int
	RatePer time.Duration
	// RateBurst is how many may start at once after a quiet spell (key
	// rate_burst). Default: 1.
	RateBurst int
	// RateKey, a text/template over the job's payload, gives a limit per
	// value (key rate_key, such as "{{.customer}}"). Empty: one limit for
	// the task.
	RateKey string

	redactor *Redactor          // of Redact and RedactOutput; nil: none
	rateKey  *template.Template // of RateKey; nil: none
}

// Redactor returns the masking of the task's secrets: nil, masking
// nothing, when it has no redact or redact_output.
func (t *Task) Redactor() *Redactor { return t.redactor }

// TypeConfig returns the queue policy of the task's job type.
func (t *Task) TypeConfig() queue.TypeConfig {
	return queue.TypeConfig{
		Timeout:     t.Timeout,
		Concurrency: t.Concurrency,
		Backoff:     t.Backoff,
		MaxBackoff:  t.MaxBackoff,
		LogOutput:   t.LogOutput,
		GiveUpAfter: t.GiveUpAfter,
		RedactFunc:  t.redactFunc(),
		Accepts:     t.Accepts,
		Rate:        t.rate(),
	}
}

// rate is the queue's rate limit of the task; zero when it has none.
func (t *Task) rate() queue.Rate {
	if t.Rate == 0 {
		return queue.Rate{}
	}
	r := queue.Rate{Starts: t.Rate, Per: t.RatePer, Burst: t.RateBurst}
	if tmpl := t.rateKey; tmpl != nil {
		r.Key = func(payload json.RawMessage) string {
			k, _ := rateKeyOf(tmpl, payload)
			return k
		}
	}
	return r
}

// rateKeyOf executes a task's rate_key over a job's payload. A payload the
// key cannot be read from (not an object, or lacking a field the template
// reads) shares the limit of the empty key "".
func rateKeyOf(tmpl *template.Template, payload json.RawMessage) (string, error) {
	data, err := decodeObject(payload)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// redactFunc is the queue's hook that masks an attempt's output and error
// before they are stored; nil when the task redacts nothing.
func (t *Task) redactFunc() func(j *queue.Job, s string) string {
	r := t.redactor
	if r == nil {
		return nil
	}
	return func(j *queue.Job, s string) string { return r.Attempt(j.Payload, s) }
}

// CatchUp is a schedule's policy for instants missed while nothing ran it:
// downtime, a pause, or a forward jump of the clock.
type CatchUp string

// Catch-up policies. An instant counts as missed when it is materialised
// later than Scheduler.MisfireGrace, or was passed during a pause;
// instants within the grace of a running schedule always run.
const (
	// CatchUpLatest runs the most recent missed instant once, unless an
	// instant on time runs anyway, and skips the others. The default.
	CatchUpLatest CatchUp = "latest"
	// CatchUpAll runs each missed instant, the newest CatchUpLimit of them,
	// and skips the older ones.
	CatchUpAll CatchUp = "all"
	// CatchUpNone skips every missed instant.
	CatchUpNone CatchUp = "none"
)

// UnmarshalText accepts "latest", "all" or "none".
func (c *CatchUp) UnmarshalText(b []byte) error {
	switch v := CatchUp(b); v {
	case CatchUpLatest, CatchUpAll, CatchUpNone:
		*c = v
		return nil
	}
	return fmt.Errorf("%q is not a catch-up policy: want latest, all or none", b)
}

// Overlap is a schedule's policy for an instant that comes while a job of
// the same schedule and item is still pending or running.
type Overlap string

// Overlap policies.
const (
	// OverlapAllow materialises every instant. The default, as with cron.
	OverlapAllow Overlap = "allow"
	// OverlapSkip records the instant as skipped (store.SkipOverlap)
	// instead, per item.
	OverlapSkip Overlap = "skip"
)

// UnmarshalText accepts "allow" or "skip".
func (o *Overlap) UnmarshalText(b []byte) error {
	switch v := Overlap(b); v {
	case OverlapAllow, OverlapSkip:
		*o = v
		return nil
	}
	return fmt.Errorf("%q is not an overlap policy: want allow or skip", b)
}

// Schedule is a [[schedule]] table: when to make which jobs.
type Schedule struct {
	// Name identifies the schedule (key name): its cursor, its jobs' dedup
	// keys. Letters, digits and "-_.:@/".
	Name string
	// Cron is the expression as written (key cron); see Spec.
	Cron string
	// Location is the zone Cron is read in: its CRON_TZ= prefix, else the
	// schedule's timezone key, else Scheduler.Timezone.
	Location *time.Location
	// Task names the [tasks.NAME] whose jobs the schedule makes (key task).
	Task string
	// Payload is merged into every job's payload (key payload).
	Payload map[string]any
	// ForEach fans each instant out to one job per item (key for_each);
	// see Item.
	ForEach []map[string]any
	// CatchUp is the policy for missed instants (key catch_up). Default:
	// CatchUpLatest.
	CatchUp CatchUp
	// CatchUpLimit is how many missed instants CatchUpAll runs (key
	// catch_up_limit, 1 to MaxCatchUpLimit). Default: 100.
	CatchUpLimit int
	// Overlap is the policy for instants that find the previous run still
	// pending or running (key overlap). Default: OverlapAllow.
	Overlap Overlap
	// StartWithin raises a late alarm for an instant whose run, per item,
	// has not started within this time of the instant (key start_within,
	// positive, shorter than Deadline). Default: Scheduler.StartWithin;
	// zero: no late alarms.
	StartWithin time.Duration
	// Deadline raises a missed alarm for an instant whose run, per item,
	// has not succeeded within this time of the instant (key deadline,
	// positive). Default: Scheduler.Deadline; zero: no missed alarms.
	Deadline time.Duration
	// Notify names the tasks that get a job for each alarm of the schedule
	// (key notify). Default: Scheduler.Notify; an empty array: none.
	Notify []string

	spec  *Spec
	items []Item
}

// Watched reports whether the schedule raises alarms: it has a
// start_within, a deadline or tasks to notify. Only a watched schedule's
// dead jobs and misfires raise alarms.
func (s *Schedule) Watched() bool {
	return s.StartWithin > 0 || s.Deadline > 0 || len(s.Notify) > 0
}

// Spec returns the parsed cron expression.
func (s *Schedule) Spec() *Spec { return s.spec }

// Items returns the fan-out: one Item per for_each entry, or one Item with
// ID "" for a schedule without for_each. The caller must not modify it.
func (s *Schedule) Items() []Item { return s.items }

// Next returns the first instant after after at which s fires; see
// Spec.Next.
func (s *Schedule) Next(after time.Time) time.Time { return s.spec.Next(after) }

// ConfigError is one problem of a configuration file.
type ConfigError struct {
	File string // the file, as given to Load or Parse
	Line int    // 1-based line; 0 when unknown
	// Table is "scheduler", "task", "schedule", "http" or "pool": where
	// the problem is;
	// empty for the file as a whole.
	Table string
	// Job names the task or schedule; a schedule without a usable name is
	// "#N", its 1-based position among the [[schedule]] tables.
	Job string
	// Field is the key the problem is in, such as "cron"; empty for a
	// whole table.
	Field string
	Err   error
}

// Error formats e as file:line: schedule "name": field cron: problem.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	switch {
	case e.Table != "" && strings.HasPrefix(e.Job, "#"):
		fmt.Fprintf(&b, "%s %s: ", e.Table, e.Job)
	case e.Table != "" && e.Job != "":
		fmt.Fprintf(&b, "%s %q: ", e.Table, e.Job)
	case e.Table != "":
		fmt.Fprintf(&b, "%s: ", e.Table)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying problem.
func (e *ConfigError) Unwrap() error { return e.Err }

// ConfigErrors is every problem found in a configuration file, in line
// order. Load and Parse return it as their error.
type ConfigErrors []*ConfigError

// Error lists the problems, one per line.
func (es ConfigErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.As and errors.Is.
func (es ConfigErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Load reads, decodes and validates the configuration file at path. Nothing
// is returned unless everything is valid: a bad file yields a nil Config and
// a ConfigErrors listing every problem found.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates a configuration held in data; name is used in
// errors and as Config.File. See Load. Data over MaxConfigSize or nested
// deeper than MaxConfigDepth is refused before it is decoded.
func Parse(name string, data []byte) (*Config, error) {
	if err := checkBounds(name, data); err != nil {
		return nil, ConfigErrors{err}
	}
	l := newLoader(name, data)
	cfg := l.load()
	if len(l.errs) > 0 {
		return nil, l.sortedErrors()
	}
	return cfg, nil
}
