package store

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// The interfaces below are an engine's operations, by the role of the code
// that calls them. Every engine implements all of them (Engine); a caller
// asks for the role it plays. Each operation is one transaction unless it
// says otherwise. An engine is safe for concurrent use, and any number of
// engines, in this process or others (on PostgreSQL, on other hosts), may
// share one database: every rule holds across them.
//
// Every time an engine writes or compares (a run_at, a lease, a cursor's
// pause) comes from its Clock, so that engines sharing a database agree. A
// lease is judged across steps of Clock's wall clock: a forward step takes
// none early (see Leases).

// Producer adds jobs.
type Producer interface {
	// Enqueue adds a job unless one with the same key exists, in which case
	// it inserts nothing and returns the existing job's id, or reports that
	// a job with the key existed and was purged since (Enqueued.Purged):
	// a key, once used, stays used. The commit is durable before Enqueue
	// returns (unless the engine was opened to trade that for speed).
	Enqueue(ctx context.Context, j NewJob) (Enqueued, error)
	// EnqueueBatch enqueues jobs in one transaction: all or none. Results
	// are in the order of jobs.
	EnqueueBatch(ctx context.Context, jobs []NewJob) ([]Enqueued, error)
}

// PoolProtocol is what a worker pool needs of an engine: the transaction
// of each turn of its loop, when to wake, its row, cancels and rate
// limits, and maintenance.
type PoolProtocol interface {
	// CommitPoolTx commits one transaction of a pool's loop (see PoolTx).
	CommitPoolTx(ctx context.Context, t PoolTx) (PoolTxResult, error)
	// NextWake returns when the next pending job of one of types, of a
	// version that versions accepts, becomes ready and when the earliest
	// lease held by an owner other than owner expires (zero when none), as
	// reclaim judges it: after a forward step of the clock, later than its
	// end (see Leases).
	NextWake(ctx context.Context, owner string, types []string, versions Versions) (ready, lease time.Time, err error)
	// NextReadyAfter returns the earliest run_at after since of the pending
	// jobs of types; zero when none. A pool whose rate-limited jobs wait
	// for their buckets asks it, to wake for the jobs that became ready
	// since its last claim rather than for those it held back.
	NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error)
	// CancelRequests returns the cancel requests on the jobs owner runs.
	CancelRequests(ctx context.Context, owner string) ([]CancelRequest, error)
	// Leave deletes owner's pool row: the pool stopped claiming.
	Leave(ctx context.Context, owner string) error
	// PauseRate raises the TAT of the rate limit bucket of typ and key to
	// at least tat (see RateLimit.PauseTAT), in a transaction of its own.
	PauseRate(ctx context.Context, typ, key string, tat time.Time) error
	// Maintain reclaims expired leases, then purges what is older than
	// retain: done jobs with their attempts, closed alarms, skip records
	// and full rate limit buckets. The key of a purged job stays used, and
	// so does its id. Where several nodes share the database it runs on
	// one at a time (MaintenanceReport.Skipped on the others).
	Maintain(ctx context.Context, retain time.Duration) (MaintenanceReport, error)
	// Subscribe returns a channel that receives a value (coalesced) after
	// each commit of this engine that makes a job ready: the in-process
	// wake of a pool. The func unsubscribes.
	Subscribe() (<-chan struct{}, func())
	// Watch sends on changed (without blocking; changed has a buffer of
	// one) when another process or node may have made a job ready or asked
	// for a cancel, until ctx is done. It calls started once it watches:
	// a change after that is not missed. It calls started once in any
	// case, at the latest before it returns, even when it never watched
	// (ctx done first): a pool waits for it. Where it cannot be told, it
	// polls every w.Poll; where it can, it still looks every w.Safety, in
	// case a notice was lost.
	Watch(ctx context.Context, w WatchConfig, changed chan<- struct{}, started func())
}

// BeatProtocol is what the beat needs: the schedules' cursors, moved with
// the jobs of their instants, and their pause.
type BeatProtocol interface {
	// Advance inserts a.Jobs (idempotently, by key) and a.Skips and moves
	// the schedule's cursor from a.From to a.To, in one transaction. If the
	// stored cursor is not a.From (another beat moved it) or its pause state
	// is not a.Paused, nothing is written and the error wraps
	// ErrCursorMoved. Any number of beats may advance the same schedule,
	// and each instant is materialised once.
	Advance(ctx context.Context, a Advance) ([]Enqueued, error)
	// AdvanceBatch commits many Advances in few transactions, each still
	// all or nothing with its own compare-and-set of the cursor (see
	// AdvanceResult). A schedule may appear once in advs.
	AdvanceBatch(ctx context.Context, advs []Advance) ([]AdvanceResult, error)
	// Cursors returns every schedule's cursor, by schedule name.
	Cursors(ctx context.Context) (map[string]Cursor, error)
	// CursorsByName calls yield with every schedule's cursor, in the byte
	// order of the schedules' names, until yield returns false; the cursors
	// are of one snapshot.
	CursorsByName(ctx context.Context, yield func(Cursor) bool) error
	// SetPaused pauses or resumes a schedule durably. A schedule without a
	// cursor gets one at now.
	SetPaused(ctx context.Context, schedule string, paused bool) error
}

// AlarmProtocol is what the evaluation of alarms needs.
type AlarmProtocol interface {
	// RaiseAlarms commits b in one transaction: each alarm is inserted
	// unless one with its key exists, and its notification jobs are
	// enqueued only when it was inserted; the alarms it resolves are
	// closed; the marks move forward (a mark earlier than the stored one
	// leaves it). It returns the alarms inserted, in the order of
	// b.Alarms: an alarm is raised once however many engines evaluate it.
	RaiseAlarms(ctx context.Context, b AlarmBatch) ([]Alarm, error)
	// AlarmMarks returns every schedule's alarm marks, by schedule name.
	AlarmMarks(ctx context.Context) (map[string]AlarmMark, error)
	// InstantJobs returns up to limit jobs of schedule whose instant is in
	// (after, through], oldest instant first, then by item.
	InstantJobs(ctx context.Context, schedule string, after, through time.Time, limit int) ([]InstantJob, error)
	// DeadJobs returns up to limit dead jobs of any schedule (not of no
	// schedule) that finished after after, oldest first.
	DeadJobs(ctx context.Context, after time.Time, limit int) ([]*Job, error)
	// SkipsBetween returns up to limit skips of schedule for reason whose
	// instant is in (after, through], oldest first.
	SkipsBetween(ctx context.Context, schedule string, reason SkipReason, after, through time.Time, limit int) ([]Skip, error)
	// OpenAlarms returns up to limit open alarms, oldest first, with the
	// state of their jobs.
	OpenAlarms(ctx context.Context, limit int) ([]OpenAlarm, error)
	// LastSuccess returns when the newest instant of schedule that
	// succeeded finished; zero when none is kept.
	LastSuccess(ctx context.Context, schedule string) (time.Time, error)
}

// Operator is the writes of a person or program that operates the queue.
type Operator interface {
	// Retry makes the dead job id pending again, to run at once with a
	// fresh set of attempts, and sets its RetriedAt to now; or returns
	// ErrNotFound.
	Retry(ctx context.Context, id int64) error
	// RetryAllDead makes every dead job pending again, as Retry does, and
	// returns how many.
	RetryAllDead(ctx context.Context) (int64, error)
	// RequestCancel cancels job id on behalf of by and returns the state
	// the job was in. A pending job is cancelled at once; a running one is
	// marked, for the pool holding its lease to stop (CancelRequests), or
	// ends cancelled when its lease is reclaimed. The error wraps
	// ErrNotFound when no job has that id.
	RequestCancel(ctx context.Context, id int64, by string) (State, error)
	// SaveConfig stores data, read from the file at path, as the
	// configuration the daemon now runs, durably.
	SaveConfig(ctx context.Context, path string, data []byte) (*StoredConfig, error)
}

// JobViews are the reads of jobs, their counts and the pools, for
// operators and the dashboard.
type JobViews interface {
	// Job returns the job with this id, or ErrNotFound.
	Job(ctx context.Context, id int64) (*Job, error)
	// JobByKey returns the job with this dedup key, or ErrNotFound.
	JobByKey(ctx context.Context, key string) (*Job, error)
	// List returns the jobs f selects, newest (highest id) first, never
	// counting or sorting the whole table (see ListScanBound).
	List(ctx context.Context, f Filter) ([]*Job, error)
	// Attempts returns the attempts of a job by number, in the order they
	// were recorded within a number. A done job's successful attempt comes
	// from its row when no attempt row was written for it.
	Attempts(ctx context.Context, jobID int64) ([]Attempt, error)
	// Dead returns up to limit dead jobs, oldest first.
	Dead(ctx context.Context, limit int) ([]*Job, error)
	// Stats counts jobs by state and type and measures the oldest ready job.
	Stats(ctx context.Context) (Stats, error)
	// Pools returns the recorded pools' rows, most recently seen first (at
	// most 100): the running ones and those that stopped without deleting
	// their row in the last PresenceKept.
	Pools(ctx context.Context) ([]PoolRow, error)
	// Unhandled reports which ready jobs wait for a handler: the types that
	// no running pool has registered, and the versions of a registered type
	// that no running pool accepts.
	Unhandled(ctx context.Context) (Unhandled, error)
	// RateTAT returns the TAT of the rate limit bucket of typ and key; zero
	// when it has no row (a full bucket).
	RateTAT(ctx context.Context, typ, key string) (time.Time, error)
}

// ScheduleViews are the reads of the schedules' jobs, skips, alarms and the
// running configuration, for operators and the dashboard.
type ScheduleViews interface {
	// Finishes returns, per schedule of schedules that has a job kept,
	// when its jobs last finished, by an index seek per schedule.
	Finishes(ctx context.Context, schedules []string) (map[string]Finishes, error)
	// LastRuns returns, per schedule, its newest job: the one of its latest
	// instant, or its newest manual run when it has no instant's job.
	LastRuns(ctx context.Context) (map[string]*Job, error)
	// LastManualRuns returns, per schedule, its newest job that stands for
	// no instant (a manual run).
	LastManualRuns(ctx context.Context) (map[string]*Job, error)
	// ScheduleJobs returns up to limit jobs of a schedule, newest instant first.
	ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*Job, error)
	// Instant returns how the jobs of schedule's instant at stand.
	Instant(ctx context.Context, schedule string, at time.Time) (InstantOutcome, error)
	// ManualRun returns how the jobs of one manual run stand: the newest
	// span jobs of schedule that stand for no instant (ScheduledAt zero),
	// have an id up to lastID, the run's newest, and a key ending with
	// keySuffix. Ids follow the order of enqueues, but the jobs of one
	// EnqueueBatch need not have consecutive ids (other writers on the
	// database draw ids in between), so other jobs among the run's are
	// passed over, not counted against span.
	ManualRun(ctx context.Context, schedule string, lastID int64, span int, keySuffix string) (InstantOutcome, error)
	// ListSkips returns up to limit (1 to MaxList) skipped instants, newest
	// instant first: of schedule, or of every schedule when it is empty.
	ListSkips(ctx context.Context, schedule string, limit int) ([]Skip, error)
	// SkipAt returns the skip of schedule's item at the instant at: one of
	// that item, or one of the whole schedule (item ""), or ErrNotFound.
	SkipAt(ctx context.Context, schedule, item string, at time.Time) (Skip, error)
	// SkipSummary counts the skips of schedule's instants after since and
	// returns its newest skip.
	SkipSummary(ctx context.Context, schedule string, since time.Time) (SkipSummary, error)
	// Alarms returns up to limit (1 to MaxList) alarms, newest first: of
	// schedule, or of every schedule when it is empty.
	Alarms(ctx context.Context, schedule string, limit int) ([]Alarm, error)
	// LastConfig returns the configuration stored by the last SaveConfig,
	// or ErrNotFound.
	LastConfig(ctx context.Context) (*StoredConfig, error)
}

// Engine is a storage engine: every role above, and its own life.
type Engine interface {
	// Name says where the rows are, for logs and errors: a file's path, or
	// a database's address without its password.
	Name() string
	// Clock is the clock the engine decides with. Pools and beats on this
	// engine take their time from it, so that nodes whose own clocks differ
	// agree (on PostgreSQL it follows the database server's clock).
	Clock() clock.Clock
	// Close releases the engine. Pools using it must have returned from Run.
	Close() error
	// Ping reads the database, cheaply: it fails when it cannot be read.
	Ping(ctx context.Context) error

	Producer
	PoolProtocol
	BeatProtocol
	AlarmProtocol
	Operator
	JobViews
	ScheduleViews
}
