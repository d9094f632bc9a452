package queue

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// Store is a storage engine: it keeps the queue's rows and applies its rules,
// each operation in one transaction. It is safe for concurrent use, and any
// number of Stores, in this process or others (on PostgreSQL, on other
// hosts), may share one database: every rule below holds across them.
//
// Every time a Store writes or compares (a run_at, a lease, a cursor's
// pause) comes from Clock, so that Stores sharing a database agree. A lease
// is judged across steps of Clock's wall clock: a forward step takes none
// early (see store.Leases).
type Store interface {
	// Name says where the rows are, for logs and errors: a file's path, or
	// a database's address without its password.
	Name() string
	// Clock is the clock the store decides with. Pools and beats on this
	// store take their time from it, so that nodes whose own clocks differ
	// agree (on PostgreSQL it follows the database server's clock).
	Clock() clock.Clock
	// Close releases the store. Pools using it must have returned from Run.
	Close() error
	// Ping reads the database, cheaply: it fails when it cannot be read.
	Ping(ctx context.Context) error

	// Enqueue adds a job unless one with the same key exists, in which case
	// it inserts nothing and returns the existing job's id, or reports that
	// a job with the key existed and was purged since (Enqueued.Purged):
	// a key, once used, stays used. The commit is durable before Enqueue
	// returns (unless the engine was opened to trade that for speed).
	Enqueue(ctx context.Context, j store.NewJob) (store.Enqueued, error)
	// EnqueueBatch enqueues jobs in one transaction: all or none. Results
	// are in the order of jobs.
	EnqueueBatch(ctx context.Context, jobs []store.NewJob) ([]store.Enqueued, error)
	// Advance inserts a.Jobs (idempotently, by key) and a.Skips and moves
	// the schedule's cursor from a.From to a.To, in one transaction. If the
	// stored cursor is not a.From (another beat moved it) or its pause state
	// is not a.Paused, nothing is written and the error wraps
	// ErrCursorMoved. Correctness never depends on a single beat: any
	// number may advance the same schedule, and each instant is
	// materialised once.
	Advance(ctx context.Context, a store.Advance) ([]store.Enqueued, error)
	// AdvanceBatch commits many Advances in few transactions, each still
	// all or nothing with its own compare-and-set of the cursor (see
	// AdvanceResult). A schedule may appear once in advs.
	AdvanceBatch(ctx context.Context, advs []store.Advance) ([]store.AdvanceResult, error)
	// Cursors returns every schedule's cursor, by schedule name.
	Cursors(ctx context.Context) (map[string]store.Cursor, error)
	// CursorsByName calls yield with every schedule's cursor, in the byte
	// order of the schedules' names, until yield returns false; the cursors
	// are of one snapshot. An engine whose read would hold a connection that
	// the caller's writes may need reads them all before the first yield;
	// one with a writer of its own yields them as it reads them.
	CursorsByName(ctx context.Context, yield func(store.Cursor) bool) error
	// SetPaused pauses or resumes a schedule durably. A schedule without a
	// cursor gets one at now.
	SetPaused(ctx context.Context, schedule string, paused bool) error

	// Job returns the job with this id, or ErrNotFound.
	Job(ctx context.Context, id int64) (*store.Job, error)
	// JobByKey returns the job with this dedup key, or ErrNotFound.
	JobByKey(ctx context.Context, key string) (*store.Job, error)
	// List returns the jobs f selects, newest (highest id) first, never
	// counting or sorting the whole table (see ListScanBound).
	List(ctx context.Context, f store.Filter) ([]*store.Job, error)
	// Attempts returns the attempts of a job by number, in the order they
	// were recorded within a number. A done job's successful attempt comes
	// from its row when no attempt row was written for it.
	Attempts(ctx context.Context, jobID int64) ([]store.Attempt, error)
	// Dead returns up to limit dead jobs, oldest first.
	Dead(ctx context.Context, limit int) ([]*store.Job, error)
	// Stats counts jobs by state and type and measures the oldest ready job.
	Stats(ctx context.Context) (store.Stats, error)
	// Finishes returns, per schedule of schedules that has a job kept,
	// when its jobs last finished, by an index seek per schedule.
	Finishes(ctx context.Context, schedules []string) (map[string]store.Finishes, error)
	// LastRuns returns, per schedule, its newest job: the one of its latest
	// instant, or its newest manual run when it has no instant's job.
	LastRuns(ctx context.Context) (map[string]*store.Job, error)
	// LastManualRuns returns, per schedule, its newest job that stands for
	// no instant (a manual run).
	LastManualRuns(ctx context.Context) (map[string]*store.Job, error)
	// ScheduleJobs returns up to limit jobs of a schedule, newest instant first.
	ScheduleJobs(ctx context.Context, schedule string, limit int) ([]*store.Job, error)
	// Instant returns how the jobs of schedule's instant at stand.
	Instant(ctx context.Context, schedule string, at time.Time) (store.InstantOutcome, error)
	// Run returns how the jobs of one manual run stand: the newest span
	// jobs of schedule that stand for no instant (ScheduledAt zero), have
	// an id up to lastID, the run's newest, and a key ending with
	// keySuffix. Ids follow the order of enqueues, but the jobs of one
	// EnqueueBatch need not have consecutive ids (other writers on the
	// database draw ids in between), so other jobs among the run's are
	// passed over, not counted against span.
	Run(ctx context.Context, schedule string, lastID int64, span int, keySuffix string) (store.InstantOutcome, error)
	// Skips returns up to limit skipped instants of schedule, newest first.
	Skips(ctx context.Context, schedule string, limit int) ([]store.Skip, error)
	// ListSkips returns up to limit (1 to MaxList) skipped instants, newest
	// instant first: of schedule, or of every schedule when it is empty.
	ListSkips(ctx context.Context, schedule string, limit int) ([]store.Skip, error)
	// SkipAt returns the skip of schedule's item at the instant at: one of
	// that item, or one of the whole schedule (item ""), or ErrNotFound.
	SkipAt(ctx context.Context, schedule, item string, at time.Time) (store.Skip, error)
	// SkipSummary counts the skips of schedule's instants after since and
	// returns its newest skip.
	SkipSummary(ctx context.Context, schedule string, since time.Time) (store.SkipSummary, error)

	// RaiseAlarms commits b in one transaction: each alarm is inserted
	// unless one with its key exists, and its notification jobs are
	// enqueued only when it was inserted; the alarms it resolves are
	// closed; the marks move forward (a mark earlier than the stored one
	// leaves it). It returns the alarms inserted, in the order of
	// b.Alarms: an alarm is raised once however many stores evaluate it.
	RaiseAlarms(ctx context.Context, b store.AlarmBatch) ([]store.Alarm, error)
	// AlarmMarks returns every schedule's alarm marks, by schedule name.
	AlarmMarks(ctx context.Context) (map[string]store.AlarmMark, error)
	// InstantJobs returns up to limit jobs of schedule whose instant is in
	// (after, through], oldest instant first, then by item.
	InstantJobs(ctx context.Context, schedule string, after, through time.Time, limit int) ([]store.InstantJob, error)
	// DeadJobs returns up to limit dead jobs of any schedule (not of no
	// schedule) that finished after after, oldest first.
	DeadJobs(ctx context.Context, after time.Time, limit int) ([]*store.Job, error)
	// SkipsBetween returns up to limit skips of schedule for reason whose
	// instant is in (after, through], oldest first.
	SkipsBetween(ctx context.Context, schedule string, reason store.SkipReason, after, through time.Time, limit int) ([]store.Skip, error)
	// OpenAlarms returns up to limit open alarms, oldest first, with the
	// state of their jobs.
	OpenAlarms(ctx context.Context, limit int) ([]store.OpenAlarm, error)
	// Alarms returns up to limit (1 to MaxList) alarms, newest first: of
	// schedule, or of every schedule when it is empty.
	Alarms(ctx context.Context, schedule string, limit int) ([]store.Alarm, error)
	// LastSuccess returns when the newest instant of schedule that
	// succeeded finished; zero when none is kept.
	LastSuccess(ctx context.Context, schedule string) (time.Time, error)

	// Retry makes the dead job id pending again, to run at once with a
	// fresh set of attempts, and sets its RetriedAt to now; or returns
	// ErrNotFound.
	Retry(ctx context.Context, id int64) error
	// RetryAllDead makes every dead job pending again, as Retry does, and
	// returns how many.
	RetryAllDead(ctx context.Context) (int64, error)
	// Cancel stops a pending job from ever running; ErrNotFound means no
	// pending job has that id.
	Cancel(ctx context.Context, id int64) error
	// RequestCancel cancels job id on behalf of by and returns the state
	// the job was in. A pending job is cancelled at once; a running one is
	// marked, for the pool holding its lease to stop (CancelRequests), or
	// ends cancelled when its lease is reclaimed. The error wraps
	// ErrNotFound when no job has that id.
	RequestCancel(ctx context.Context, id int64, by string) (store.State, error)

	// Reclaim returns running jobs whose lease expired to pending, or to
	// dead when they have no attempt left, or to cancelled when a cancel
	// was requested, and records the lost attempts.
	Reclaim(ctx context.Context) (int, error)
	// Purge deletes done jobs finished before before, with their attempts,
	// closed alarms raised before it (an open one stays until its recovery
	// closes it), and skip records older than before, in batches, each its own
	// transaction. The key of a purged job stays used, and so does its id:
	// no job gets it again (an engine may keep the newest job for that).
	Purge(ctx context.Context, before time.Time) (jobs, skips int64, err error)
	// Maintain reclaims expired leases, then purges what is older than
	// retain. Where several nodes share the database it runs on one at a
	// time (MaintenanceReport.Skipped on the others).
	Maintain(ctx context.Context, retain time.Duration) (store.MaintenanceReport, error)

	// SaveConfig stores data, read from the file at path, as the
	// configuration the daemon now runs, durably.
	SaveConfig(ctx context.Context, path string, data []byte) (*store.StoredConfig, error)
	// LastConfig returns the configuration stored by the last SaveConfig,
	// or ErrNotFound.
	LastConfig(ctx context.Context) (*store.StoredConfig, error)
	// Daemons returns the recorded pools, most recently seen first (at
	// most 100): the running ones and those that stopped without deleting
	// their row in the last PresenceKept.
	Daemons(ctx context.Context) ([]store.Daemon, error)
	// Handlers reports which ready jobs wait for a handler: the types that
	// no running pool has registered, and the versions of a registered type
	// that no running pool accepts.
	Handlers(ctx context.Context) (store.Handlers, error)

	// Trip is one write transaction of a pool (see Trip).
	Trip(ctx context.Context, t store.Trip) (store.TripResult, error)
	// NextWake returns when the next pending job of one of types, of a
	// version that versions accepts, becomes ready and when the earliest
	// lease held by an owner other than owner expires (zero when none), as
	// reclaim judges it: after a forward step of the clock, later than its
	// end (see store.Leases).
	NextWake(ctx context.Context, owner string, types []string, versions store.Versions) (ready, lease time.Time, err error)
	// CancelRequests returns the cancel requests on the jobs owner runs.
	CancelRequests(ctx context.Context, owner string) ([]store.CancelRequest, error)
	// Absent deletes owner's pool row: the pool stopped claiming.
	Absent(ctx context.Context, owner string) error
	// PauseRate raises the TAT of the rate limit bucket of typ and key to
	// at least tat (see store.RateLimit.PauseTAT), in a transaction of its
	// own.
	PauseRate(ctx context.Context, typ, key string, tat time.Time) error
	// NextReadyAfter returns the earliest run_at after since of the pending
	// jobs of types; zero when none. A pool whose rate-limited jobs wait
	// for their buckets asks it, to wake for the jobs that became ready
	// since its last claim rather than for those it held back.
	NextReadyAfter(ctx context.Context, types []string, since time.Time) (time.Time, error)
	// RateTAT returns the TAT of the rate limit bucket of typ and key; zero
	// when it has no row (a full bucket).
	RateTAT(ctx context.Context, typ, key string) (time.Time, error)
	// Subscribe returns a channel that receives a value (coalesced) after
	// each commit of this Store that makes a job ready: the in-process wake
	// of a pool. The func unsubscribes.
	Subscribe() (<-chan struct{}, func())
	// Watch sends on changed (without blocking; changed has a buffer of
	// one) when another process or node may have made a job ready or asked
	// for a cancel, until ctx is done. It calls started once it watches:
	// a change after that is not missed. It calls started once in any
	// case, at the latest before it returns, even when it never watched
	// (ctx done first): a pool waits for it. Where it cannot be told, it polls
	// every w.Poll; where it can, it still looks every w.Safety, in case
	// a notice was lost.
	Watch(ctx context.Context, w store.WatchConfig, changed chan<- struct{}, started func())
}
