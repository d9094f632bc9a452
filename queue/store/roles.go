package store

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// The interfaces below are an engine's operations by caller role; every
// engine implements all (Engine). Each is one transaction unless it says
// otherwise. An engine is safe for concurrent use, and any number of engines,
// in any process or host, may share a database: every rule holds across them.
// Every instant an engine writes or compares comes from its Clock, so they
// agree; a forward wall-clock step takes no lease early (see Leases).

// Producer adds jobs.
type Producer interface {
	// Enqueue adds a job unless one with its key exists; then it returns that
	// job's id, or Purged: a key once used stays used. The commit is durable
	// (it survives a power loss) before Enqueue returns.
	Enqueue(ctx context.Context, j NewJob) (Enqueued, error)
	// EnqueueBatch enqueues jobs in one transaction, all or none, results in
	// order.
	EnqueueBatch(ctx context.Context, jobs []NewJob) ([]Enqueued, error)
	// EnqueueFanIn enqueues f's members and f itself in one durable
	// transaction, all or none, unless a fan-in of its key exists: then it
	// inserts nothing. f.Then is enqueued, once, in the transaction that
	// ends the last member (see NewFanIn).
	EnqueueFanIn(ctx context.Context, f NewFanIn) (FanInEnqueued, error)
}

// PoolProtocol is what a worker pool needs: its loop's transactions, when
// to wake, its row, cancels, rate limits and maintenance.
type PoolProtocol interface {
	// CommitPoolTx commits one transaction of a pool's loop (see PoolTx).
	CommitPoolTx(ctx context.Context, t PoolTx) (PoolTxResult, error)
	// NextWake returns when the next pending job of types and versions
	// becomes ready, and when another owner's earliest lease expires as
	// reclaim judges it (see Leases); zero when none.
	NextWake(ctx context.Context, owner string, types []string, versions Versions) (ready, lease time.Time, err error)
	// NextReadyAfter returns the earliest run_at after since of pending jobs
	// of types, or zero: a pool whose rate-limited jobs wait wakes for jobs
	// ready since its last claim, not for those it held back.
	NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error)
	// CancelRequests returns the cancel requests on the jobs owner runs.
	CancelRequests(ctx context.Context, owner string) ([]CancelRequest, error)
	// Leave deletes owner's pool row as the pool stops claiming.
	Leave(ctx context.Context, owner string) error
	// PauseRate raises typ and key's bucket TAT to at least tat (see
	// RateLimit.PauseTAT), in its own transaction.
	PauseRate(ctx context.Context, typ, key string, tat time.Time) error
	// Maintain reclaims expired leases, then purges what is older than
	// retain: done jobs and their attempts, closed alarms, skips and full
	// rate buckets. A purged job's key and id stay used. Where nodes share
	// the database, one runs it at a time (MaintenanceReport.Skipped).
	Maintain(ctx context.Context, retain time.Duration) (MaintenanceReport, error)
	// Subscribe returns a channel that receives a coalesced value after each
	// commit of this engine that makes a job ready, and a func that
	// unsubscribes.
	Subscribe() (<-chan struct{}, func())
	// Watch sends on changed (buffered, never blocking) when another process
	// or node may have made a job ready or asked for a cancel, until ctx is
	// done. It calls started once watching, so no later change is missed, and
	// in any case before it returns: a pool waits for it. It polls every
	// w.Poll where changes cannot be told, and looks every w.Safety anyway.
	Watch(ctx context.Context, w WatchConfig, changed chan<- struct{}, started func())
}

// BeatProtocol is what the beat needs: the schedules' cursors, moved with
// their instants' jobs, and their pause.
type BeatProtocol interface {
	// Advance inserts a.Jobs (idempotently, by key) and a.Skips and moves the
	// cursor from a.From to a.To in one transaction. If the cursor is not
	// a.From or its pause not a.Paused, it writes nothing and the error wraps
	// ErrCursorMoved: so each instant is materialised once however many beats
	// run.
	Advance(ctx context.Context, a Advance) ([]Enqueued, error)
	// AdvanceBatch commits many Advances in few transactions, each still
	// all or nothing with its own cursor compare-and-set (see
	// AdvanceResult). A schedule appears at most once in advs.
	AdvanceBatch(ctx context.Context, advs []Advance) ([]AdvanceResult, error)
	// EnqueueWithFanIns inserts jobs (idempotently, by key) and the fan-ins
	// over runs of them in one durable transaction, moving no cursor: a
	// manual run or a backfill of a schedule that others follow. A fan-in
	// whose members all existed already is not inserted.
	EnqueueWithFanIns(ctx context.Context, jobs []NewJob, fanIns []AdvanceFanIn) ([]Enqueued, error)
	// Cursors returns every schedule's cursor, by schedule name.
	Cursors(ctx context.Context) (map[string]Cursor, error)
	// CursorsByName calls yield with every cursor of one snapshot, in byte
	// order of names, until yield returns false.
	CursorsByName(ctx context.Context, yield func(Cursor) bool) error
	// SetPaused pauses or resumes a schedule durably. A schedule without a
	// cursor gets one at now.
	SetPaused(ctx context.Context, schedule string, paused bool) error
}

// AlarmProtocol is what the evaluation of alarms needs.
type AlarmProtocol interface {
	// RaiseAlarms commits b in one transaction: an alarm is inserted, and its
	// notifications enqueued, unless its key exists; alarms it resolves
	// close; marks only move forward. It returns the inserted alarms in
	// b.Alarms order: each is raised once however many engines evaluate.
	RaiseAlarms(ctx context.Context, b AlarmBatch) ([]Alarm, error)
	// CommitAlarms is RaiseAlarms that also groups the new alarms into
	// incidents and sends b's reminders and resolutions, each once, with
	// their notification jobs unless the schedule is silenced (see
	// Incident).
	CommitAlarms(ctx context.Context, b AlarmBatch) (AlarmOutcome, error)
	// OpenIncidents returns up to limit open incidents, oldest first, with
	// whether a notification of each is under way.
	OpenIncidents(ctx context.Context, limit int) ([]Incident, error)
	// AlarmMarks returns every schedule's alarm marks, by schedule name.
	AlarmMarks(ctx context.Context) (map[string]AlarmMark, error)
	// InstantJobs returns up to limit jobs of schedule whose instant is in
	// (after, through], by instant, then item.
	InstantJobs(ctx context.Context, schedule string, after, through time.Time, limit int) ([]InstantJob, error)
	// DeadJobs returns up to limit dead jobs of any schedule finished after
	// after, oldest first.
	DeadJobs(ctx context.Context, after time.Time, limit int) ([]*Job, error)
	// SkipsBetween returns up to limit skips of schedule for reason whose
	// instant is in (after, through], oldest first.
	SkipsBetween(ctx context.Context, schedule string, reason SkipReason, after, through time.Time, limit int) ([]Skip, error)
	// UpstreamFailedSkips returns up to limit skips of schedule for
	// SkipUpstreamFailed recorded after after, oldest recorded first.
	UpstreamFailedSkips(ctx context.Context, schedule string, after time.Time, limit int) ([]Skip, error)
	// OpenAlarms returns up to limit open alarms, oldest first, with their
	// jobs' state.
	OpenAlarms(ctx context.Context, limit int) ([]OpenAlarm, error)
	// LastSuccess returns when schedule's newest succeeded instant
	// finished; zero when none is kept.
	LastSuccess(ctx context.Context, schedule string) (time.Time, error)
}

// Operator is the writes of whoever operates the queue.
type Operator interface {
	// Retry makes the dead or discarded job id pending, to run at once with
	// fresh attempts, and sets its RetriedAt to now; or returns ErrNotFound.
	Retry(ctx context.Context, id int64) error
	// RetryAllDead retries every dead job and returns how many; discarded
	// jobs stay as they are.
	RetryAllDead(ctx context.Context) (int64, error)
	// Discard ends the dead jobs d selects as discarded, recording d.By and
	// now: they are kept, counted apart from dead ones, and never run
	// again unless retried by id. A job d names that is not dead is left
	// as it is and reported in Discarded.Refused.
	Discard(ctx context.Context, d Discard) (Discarded, error)
	// RequestCancel cancels job id on behalf of by and returns its prior
	// state: a pending job at once; a running one is marked for its lease
	// holder to stop, or ends cancelled when reclaimed. The error wraps
	// ErrNotFound for no such job.
	RequestCancel(ctx context.Context, id int64, by string) (State, error)
	// SaveConfig durably stores data, read from path, as the configuration
	// the daemon runs.
	SaveConfig(ctx context.Context, path string, data []byte) (*StoredConfig, error)
}

// IncidentOperator is the operator's reads and writes of incidents and
// silences.
type IncidentOperator interface {
	// Incidents returns up to limit (1 to MaxList) incidents, open first,
	// then newest first: of schedule, or all for "".
	Incidents(ctx context.Context, schedule string, limit int) ([]Incident, error)
	// Incident returns incident id, or an error wrapping ErrNotFound.
	Incident(ctx context.Context, id int64) (Incident, error)
	// Acknowledge records that by acknowledged the open incident id, which
	// stops its reminders, and returns it; false when it was acknowledged
	// before (it is unchanged). The error wraps ErrNotFound or
	// ErrIncidentResolved.
	Acknowledge(ctx context.Context, id int64, by string) (Incident, bool, error)
	// Silence suppresses schedule's notifications until until on behalf of
	// by; a zero until lifts its silence. Incidents are still recorded.
	Silence(ctx context.Context, schedule string, until time.Time, by string) error
	// Silences returns the silences in force, by schedule.
	Silences(ctx context.Context) (map[string]Silence, error)
}

// JobViews are the reads of jobs, counts and pools.
type JobViews interface {
	// Job returns the job with this id, or ErrNotFound.
	Job(ctx context.Context, id int64) (*Job, error)
	// JobByKey returns the job with this dedup key, or ErrNotFound.
	JobByKey(ctx context.Context, key string) (*Job, error)
	// List returns the jobs f selects, newest first, never counting or
	// sorting the whole table (see ListScanBound).
	List(ctx context.Context, f Filter) ([]*Job, error)
	// Attempts returns a job's attempts by number, then recorded order; a
	// done job's silent success comes from its row.
	Attempts(ctx context.Context, jobID int64) ([]Attempt, error)
	// Dead returns up to limit dead jobs, oldest first.
	Dead(ctx context.Context, limit int) ([]*Job, error)
	// Stats counts jobs by state and type and ages the oldest ready job.
	Stats(ctx context.Context) (Stats, error)
	// Pools returns up to 100 pool rows, most recently seen first: running
	// pools and unclean ones within PresenceKept.
	Pools(ctx context.Context) ([]PoolRow, error)
	// LiveOutput returns the output a running job's current attempt has
	// written so far, as its pool last stored it (every LiveOutputEvery
	// while it changes); ErrNotFound when none is stored or the job no
	// longer runs that attempt.
	LiveOutput(ctx context.Context, jobID int64) (LiveOutput, error)
	// Unhandled reports which ready jobs wait for a handler: types no running
	// pool registered, and versions none accepts.
	Unhandled(ctx context.Context) (Unhandled, error)
	// RateTAT returns typ and key's bucket TAT; zero for no row (full).
	RateTAT(ctx context.Context, typ, key string) (time.Time, error)
	// Activity counts, per bucket of b, the jobs that ended in it by state:
	// of schedule, or of all jobs for "", then with their start latency and
	// the queue's depth (see Activity). It reads the jobs ended since
	// b.From, by an index.
	Activity(ctx context.Context, schedule string, b Buckets) ([]Activity, error)
	// RunTimings returns schedule's newest limit (1 to MaxList) instants
	// with jobs, oldest first, each timed from first start to last finish.
	RunTimings(ctx context.Context, schedule string, limit int) ([]RunTiming, error)
}

// ScheduleViews are the reads of schedules' jobs, skips, alarms and the
// running configuration.
type ScheduleViews interface {
	// Finishes returns when each of schedules' jobs last finished, by an
	// index seek per schedule.
	Finishes(ctx context.Context, schedules []string) (map[string]Finishes, error)
	// LastRuns returns each schedule's newest job: its latest instant's, or
	// else its newest manual run.
	LastRuns(ctx context.Context) (map[string]*Job, error)
	// LastManualRuns returns each schedule's newest manual run.
	LastManualRuns(ctx context.Context) (map[string]*Job, error)
	// ScheduleJobs returns up to limit jobs of schedule, newest first.
	ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*Job, error)
	// Instant returns how the jobs of schedule's instant at stand.
	Instant(ctx context.Context, schedule string, at time.Time) (InstantOutcome, error)
	// ManualRun returns how one manual run stands: the newest span jobs of
	// schedule of no instant, ids up to lastID, keys ending keySuffix. Other
	// writers' jobs may hold ids among the run's; they are passed over, not
	// counted against span.
	ManualRun(ctx context.Context, schedule string, lastID int64, span int, keySuffix string) (InstantOutcome, error)
	// ListSkips returns up to limit (1 to MaxList) skips, newest first: of
	// schedule, or all for "".
	ListSkips(ctx context.Context, schedule string, limit int) ([]Skip, error)
	// SkipAt returns the skip of schedule's item, or whole schedule (item
	// ""), at at; or ErrNotFound.
	SkipAt(ctx context.Context, schedule, item string, at time.Time) (Skip, error)
	// SkipSummary counts schedule's skips after since, with its newest.
	SkipSummary(ctx context.Context, schedule string, since time.Time) (SkipSummary, error)
	// Alarms returns up to limit (1 to MaxList) alarms, newest first: of
	// schedule, or all for "".
	Alarms(ctx context.Context, schedule string, limit int) ([]Alarm, error)
	// FanIn returns the fan-in of this key, or ErrNotFound.
	FanIn(ctx context.Context, key string) (FanIn, error)
	// FanInsOf returns up to limit fan-ins whose job is of schedule, newest
	// first.
	FanInsOf(ctx context.Context, schedule string, limit int) ([]FanIn, error)
	// FanInJobs returns up to limit (1 to MaxAlarmRows) member jobs of the
	// fan-in of this key, by id; none when no such fan-in is kept.
	FanInJobs(ctx context.Context, key string, limit int) ([]*Job, error)
	// LastConfig returns the last SaveConfig's configuration, or ErrNotFound.
	LastConfig(ctx context.Context) (*StoredConfig, error)
}

// Engine is a storage engine: every role above, and its own life.
type Engine interface {
	// Name says where the rows are: a file's path, or a database's address
	// without its password.
	Name() string
	// Clock is the engine's clock, which its pools and beats use so nodes
	// agree (on PostgreSQL it follows the server's).
	Clock() clock.Clock
	// Close releases the engine; pools using it must have left Run.
	Close() error
	// Ping fails when the database cannot be read. It is cheap.
	Ping(ctx context.Context) error

	Producer
	PoolProtocol
	BeatProtocol
	AlarmProtocol
	IncidentOperator
	Operator
	JobViews
	ScheduleViews
}
