package store

import (
	"context"
	"time"

	"scheduler/clock"
)

// Store is a storage engine: it keeps the queue's rows and applies its rules,
// each operation in one transaction. It is safe for concurrent use, and any
// number of Stores, in this process or others (on PostgreSQL, on other
// hosts), may share one database: every rule below holds across them.
//
// Every time a Store writes or compares (a run_at, a lease, a cursor's
// pause) comes from Clock, so that Stores sharing a database agree.
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
	Enqueue(ctx context.Context, j NewJob) (Enqueued, error)
	// EnqueueBatch enqueues jobs in one transaction: all or none. Results
	// are in the order of jobs.
	EnqueueBatch(ctx context.Context, jobs []NewJob) ([]Enqueued, error)
	// Advance inserts a.Jobs (idempotently, by key) and a.Skips and moves
	// the schedule's cursor from a.From to a.To, in one transaction. If the
	// stored cursor is not a.From (another beat moved it) or its pause state
	// is not a.Paused, nothing is written and the error wraps
	// ErrCursorMoved. Correctness never depends on a single beat: any
	// number may advance the same schedule, and each instant is
	// materialised once.
	Advance(ctx context.Context, a Advance) ([]Enqueued, error)
	// AdvanceBatch commits many Advances in few transactions, each still
	// all or nothing with its own compare-and-set of the cursor (see
	// AdvanceResult). A schedule may appear once in advs.
	AdvanceBatch(ctx context.Context, advs []Advance) ([]AdvanceResult, error)
	// Cursors returns every schedule's cursor, by schedule name.
	Cursors(ctx context.Context) (map[string]Cursor, error)
	// SetPaused pauses or resumes a schedule durably. A schedule without a
	// cursor gets one at now.
	SetPaused(ctx context.Context, schedule string, paused bool) error

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
	// Run returns how the jobs of one manual run stand: the jobs of
	// schedule among the span ids up to lastID, the newest of the run,
	// whose key ends with keySuffix (the jobs of one EnqueueBatch have
	// consecutive ids).
	Run(ctx context.Context, schedule string, lastID int64, span int, keySuffix string) (InstantOutcome, error)
	// Skips returns up to limit skipped instants of schedule, newest first.
	Skips(ctx context.Context, schedule string, limit int) ([]Skip, error)
	// ListSkips returns up to limit (1 to MaxList) skipped instants, newest
	// instant first: of schedule, or of every schedule when it is empty.
	ListSkips(ctx context.Context, schedule string, limit int) ([]Skip, error)
	// SkipAt returns the skip of schedule's item at the instant at: one of
	// that item, or one of the whole schedule (item ""), or ErrNotFound.
	SkipAt(ctx context.Context, schedule, item string, at time.Time) (Skip, error)
	// SkipSummary counts the skips of schedule's instants after since and
	// returns its newest skip.
	SkipSummary(ctx context.Context, schedule string, since time.Time) (SkipSummary, error)

	// Retry makes the dead job id pending again, to run at once with a
	// fresh set of attempts, or returns ErrNotFound.
	Retry(ctx context.Context, id int64) error
	// RetryAllDead makes every dead job pending again and returns how many.
	RetryAllDead(ctx context.Context) (int64, error)
	// Cancel stops a pending job from ever running; ErrNotFound means no
	// pending job has that id.
	Cancel(ctx context.Context, id int64) error
	// RequestCancel cancels job id on behalf of by and returns the state
	// the job was in. A pending job is cancelled at once; a running one is
	// marked, for the pool holding its lease to stop (CancelRequests), or
	// ends cancelled when its lease is reclaimed. The error wraps
	// ErrNotFound when no job has that id.
	RequestCancel(ctx context.Context, id int64, by string) (State, error)

	// Reclaim returns running jobs whose lease expired to pending, or to
	// dead when they have no attempt left, or to cancelled when a cancel
	// was requested, and records the lost attempts.
	Reclaim(ctx context.Context) (int, error)
	// Purge deletes done jobs finished before before, with their attempts,
	// and skip records older than before, in batches, each its own
	// transaction. The key of a purged job stays used.
	Purge(ctx context.Context, before time.Time) (jobs, skips int64, err error)
	// Maintain reclaims expired leases, then purges what is older than
	// retain. Where several nodes share the database it runs on one at a
	// time (MaintenanceReport.Skipped on the others).
	Maintain(ctx context.Context, retain time.Duration) (MaintenanceReport, error)

	// SaveConfig stores data, read from the file at path, as the
	// configuration the daemon now runs, durably.
	SaveConfig(ctx context.Context, path string, data []byte) (*StoredConfig, error)
	// LastConfig returns the configuration stored by the last SaveConfig,
	// or ErrNotFound.
	LastConfig(ctx context.Context) (*StoredConfig, error)
	// Daemons returns the recorded pools, most recently seen first (at
	// most 100): the running ones and those that stopped without deleting
	// their row in the last PresenceKept.
	Daemons(ctx context.Context) ([]Daemon, error)
	// Handlers reports which ready jobs wait for a handler: the types that
	// no running pool has registered.
	Handlers(ctx context.Context) (Handlers, error)

	// Trip is one write transaction of a pool (see Trip).
	Trip(ctx context.Context, t Trip) (TripResult, error)
	// NextWake returns when the next pending job of one of types becomes
	// ready and when the earliest lease held by an owner other than owner
	// expires (zero when none).
	NextWake(ctx context.Context, owner string, types []string) (ready, lease time.Time, err error)
	// CancelRequests returns the cancel requests on the jobs owner runs.
	CancelRequests(ctx context.Context, owner string) ([]CancelRequest, error)
	// Absent deletes owner's pool row: the pool stopped claiming.
	Absent(ctx context.Context, owner string) error
	// Subscribe returns a channel that receives a value (coalesced) after
	// each commit of this Store that makes a job ready: the in-process wake
	// of a pool. The func unsubscribes.
	Subscribe() (<-chan struct{}, func())
	// Watch sends on changed (without blocking; changed has a buffer of
	// one) when another process or node may have made a job ready or asked
	// for a cancel, until ctx is done. It calls started once it watches:
	// a change after that is not missed. Where it cannot be told, it polls
	// every w.Poll; where it can, it still looks every w.Safety, in case
	// a notice was lost.
	Watch(ctx context.Context, w WatchConfig, changed chan<- struct{}, started func())
}

// WatchConfig tunes Store.Watch.
type WatchConfig struct {
	Poll   time.Duration // the period of the look when changes cannot be told
	Safety time.Duration // the period of the look under the notices
}

// Trip is one transaction of a pool's loop, in this order: record Results
// (fenced), reclaim expired leases when Reclaim, extend the leases of the
// owner's running jobs to Heartbeat when it is not zero, write the pool's row
// when Presence is not nil, and claim when Claim is not nil. All of it
// commits, or none.
type Trip struct {
	Owner     string
	Now       time.Time
	Results   []Result
	Reclaim   bool
	Heartbeat time.Time
	Presence  *Presence
	Claim     *Claim
}

// TripResult is what a Trip did.
type TripResult struct {
	// Fenced tells, for each of Trip.Results, whether its fence held: the
	// job was still running under that owner and attempt. A result whose
	// fence failed changed nothing but was recorded as a stale attempt.
	Fenced    []bool
	Reclaimed []Reclaimed
	// Claimed are the jobs claimed, in claim order (priority descending,
	// then run_at, then id), now running under the owner with a lease to
	// Now + Claim.Lease.
	Claimed []*Job
	// Held reports that the claim gave back prefetched jobs from one on its
	// last attempt on (see Claim.Prefetch).
	Held bool
}

// Result is the end of one attempt, to be recorded by a Trip. The outcome
// statements are fenced on (id, owner, attempt, running): a worker whose
// lease was reclaimed, and maybe claimed again elsewhere, changes nothing.
type Result struct {
	Job      *Job    // as claimed: ID, Owner and Attempt are the fence
	Worker   string  // the worker that ran it, recorded with the attempt
	Outcome  Outcome // done, retry, dead, released or cancelled
	Error    string  // capped at MaxOutput bytes by the store
	Output   string
	RetryAt  time.Time // for retry: when to run again
	Started  time.Time
	Finished time.Time
}

// Presence is a pool's row in the pools table.
type Presence struct {
	Types   []string // the types it has handlers for
	Process Process
	// First is set on the pool's first write: it also deletes the rows of
	// pools gone for PresenceKept.
	First bool
}

// Claim asks for up to N ready jobs (run_at ≤ Trip.Now, pending) of Types,
// plus up to Limited[t] of each limited type t, N overall. Jobs of other
// types are passed over and stay pending.
type Claim struct {
	Lease   time.Duration
	N       int
	Types   []string
	Limited map[string]int
	// Prefetch is how many of the N are claimed ahead of a free worker.
	// A crash spends the attempt of every claimed job, started or not, so
	// past the first N − Prefetch jobs the claim keeps only the jobs before
	// the first one on its last attempt and gives the rest back
	// (TripResult.Held).
	Prefetch int
	// Careful makes the claim look at the ready jobs before taking them,
	// so that it stops before a job on its last attempt instead of taking
	// and giving back the jobs from it on.
	Careful bool
}

// Reclaimed is a job whose expired lease was taken back.
type Reclaimed struct {
	ID      int64
	Attempt int
	Owner   string
	Dead    bool
}

// CancelRequest is a cancel request on one attempt of a running job.
type CancelRequest struct {
	ID      int64
	Attempt int
	By      string
}
