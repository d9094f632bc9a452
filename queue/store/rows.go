package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// ErrNotFound is returned when a job, schedule or key does not exist.
var ErrNotFound = errors.New("not found")

// ErrCursorMoved is returned by Advance when the schedule's cursor is no
// longer where the caller read it: another beat advanced it first.
var ErrCursorMoved = errors.New("schedule cursor moved")

// ErrSchemaTooNew is returned by an engine's Open for a database written by
// a newer version of this program.
var ErrSchemaTooNew = errors.New("database schema is newer than this program")

// ErrUnsupported is returned by an operation that one engine does not
// offer, with the reason and what to use instead in its message.
var ErrUnsupported = errors.New("not supported by this storage engine")

// Bounds of the operators' reads.
const (
	// MaxList bounds the rows of one List, ListSkips or Alarms.
	MaxList = 1000
	// ListScanBound is how many of the newest jobs (of the state asked
	// for, if any) a List filtered by type or schedule looks at. Those
	// filters have no index of their own: an index on every job's type
	// would cost every enqueue one more index write, for the sake of an
	// operator's list. A matching job older than the bound is not listed.
	ListScanBound = 100000
	// MaxSkipCount caps SkipSummary.Count: a schedule skipped more often in
	// the window reports MaxSkipCount.
	MaxSkipCount = 10000
)

// A running pool keeps one row in the pools table: the types it has handlers
// for and the process it runs in, renewed every PresenceEvery.
const (
	PresenceEvery = 30 * time.Second
	// AliveWithin is how recent a pool's row must be for the pool to count
	// as running: three missed renewals, so that a pool slowed by a busy
	// disk is not reported gone. A pool that stopped without deleting its
	// row (a crash, SIGKILL) counts as running until then.
	AliveWithin = 3 * PresenceEvery
	// PresenceKept is how long the row of a pool that did not stop cleanly
	// is kept, for the operator's "last seen", before a starting pool
	// deletes it.
	PresenceKept = 7 * 24 * time.Hour
)

// Enqueued tells what an enqueue did with one NewJob.
type Enqueued struct {
	ID       int64  // the job's id: the new one, or the existing one for a known key; 0 when Skipped or Purged
	Key      string // the job's dedup key
	Inserted bool   // false when a job with Key already existed
	Skipped  bool   // true when SkipIfActive found a run of the same schedule item in flight
	Purged   bool   // true when Key belonged to a job that ran and was purged since: nothing was inserted
}

// Advance is one step of a schedule: the jobs and skips for its instants up
// to To, committed together with the cursor moving from From to To.
type Advance struct {
	Schedule string
	From     time.Time // the cursor the caller read; zero when the schedule had none
	To       time.Time // the new cursor; not before From
	// Paused is the pause state the caller read with From: the Advance
	// commits only if the schedule is still in it. A beat that read the
	// schedule running therefore writes nothing once it is paused.
	Paused bool
	// Resume, with Paused, also resumes the schedule in the same
	// transaction: the instants the pause missed are settled and the beat
	// takes over from To at once.
	Resume bool
	Jobs   []NewJob
	Skips  []Skip
}

// AdvanceResult is what AdvanceBatch did with one Advance.
type AdvanceResult struct {
	// Jobs are the results of the Advance's jobs, in their order, as
	// Advance returns them; nil unless Err is nil.
	Jobs []Enqueued
	// Err is nil when the Advance committed. It wraps ErrCursorMoved when
	// the schedule's cursor or pause state was not the one the caller read:
	// nothing of that Advance was written, the others committed. Any other
	// error means the Advance was invalid or its transaction failed, and
	// nothing of it was written either.
	Err error
}

// Cursor is a schedule's durable position.
type Cursor struct {
	Schedule string
	At       time.Time // last instant materialised or deliberately passed
	Paused   bool
	PausedAt time.Time
}

// Stats is a snapshot of the queue for operators.
type Stats struct {
	Counts      map[State]map[string]int // jobs by state, then type
	Total       map[State]int            // jobs by state
	OldestReady time.Duration            // age of the oldest job ready to run (0: none waiting)
	// ReadySince holds, per type with a job ready to run, the run_at of
	// its oldest ready job.
	ReadySince map[string]time.Time
	Dead       int
	At         time.Time
}

// Finishes is when a schedule's jobs last ended.
type Finishes struct {
	LastSuccess    time.Time // the newest finish of a done job; zero when none is kept
	LastCompletion time.Time // the newest finish of a done or dead job; zero when none is kept
}

// Filter selects the jobs List returns. Zero fields select everything.
type Filter struct {
	State     State  // one state
	Type      string // the job type (the task's name)
	Schedule  string // the schedule's name
	KeyPrefix string // the dedup key starts with this
	// BeforeID keeps the jobs with an id below it: the next page of a list
	// whose last job shown had that id. Zero: from the newest job.
	BeforeID int64
	Limit    int // at most this many jobs, 1 to MaxList. Default: 50.
}

// InstantOutcome is how the fan-out jobs of one instant, or of one manual
// run, stand.
type InstantOutcome struct {
	Schedule    string
	ScheduledAt time.Time
	Jobs        int           // jobs of the instant, one per fan-out item
	States      map[State]int // jobs by state
}

// SkipSummary is a schedule's recent skips.
type SkipSummary struct {
	Count int   // skips of instants after since, at most MaxSkipCount
	Last  *Skip // the newest skip, at any time; nil when none is kept
}

// PoolRow is a pool's row as an operator sees it: a running pool (in a
// daemon, or any program that runs one), or one that stopped without
// deleting its row.
type PoolRow struct {
	Owner     string
	PID       int
	Host      string
	Version   string
	StartedAt time.Time
	LastSeen  time.Time
	// Config and ConfigAt are the process's Process.Config and
	// Process.ConfigAt: "" and the zero time when it records no
	// configuration.
	Config   string
	ConfigAt time.Time
}

// Alive reports whether d's row was renewed within AliveWithin of now.
func (d PoolRow) Alive(now time.Time) bool { return now.Sub(d.LastSeen) <= AliveWithin }

// Waiting is a job type with ready jobs that no running pool has a
// handler for, or a version of a type whose ready jobs no running pool
// accepts: they stay pending until one does.
type Waiting struct {
	Type string
	// Version is the payload version waiting; 0 when no running pool has
	// a handler for Type, whatever the version.
	Version int
	// Accepted are the versions of Type the running pools accept, when
	// Version is not 0.
	Accepted []int
	Ready    int           // its jobs ready to run
	Oldest   time.Duration // how long its oldest ready job has waited
}

// Unhandled is what the running pools on a queue cannot run.
type Unhandled struct {
	// Known is false when the database predates the record of pools (no
	// pool of this version has run on it): then nothing below is known.
	Known bool
	// Pools counts the running pools (a pool that stopped without saying
	// so counts until its record is AliveWithin old).
	Pools int
	// Waiting lists, by type and then version, the ready jobs that none of
	// them can run.
	Waiting []Waiting
}

// StoredConfig is a configuration file as a daemon loaded it, kept by
// SaveConfig. The store does not interpret Data.
type StoredConfig struct {
	Path     string    // the file the bytes were read from
	Data     []byte    // the file's bytes
	SHA256   string    // hex SHA-256 of Data
	LoadedAt time.Time // when SaveConfig stored it, from the store's clock
}

// ConfigSHA256 returns the hex SHA-256 of a configuration file's bytes.
func ConfigSHA256(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// MaintenanceReport counts what Maintain did.
type MaintenanceReport struct {
	Reclaimed int   // expired leases returned to pending or dead
	Purged    int64 // done jobs deleted
	Skips     int64 // skip records deleted
	// Skipped is true when another node held the maintenance lock, so this
	// call did nothing (an engine shared by several nodes runs maintenance
	// on one of them at a time, as an efficiency).
	Skipped bool
}

// Process describes the program a pool runs in, as operators see it in
// its PoolRow.
type Process struct {
	PID     int
	Host    string
	Version string // the program's version
	// Config is the hex SHA-256 of the configuration the program runs
	// (see ConfigSHA256); "" when it runs none. The store does not
	// interpret it: the daemons on a database compare theirs.
	Config string
	// ConfigAt is when the program loaded Config, by the store's clock
	// (on PostgreSQL the server's), to the millisecond; zero with no Config.
	ConfigAt time.Time
}
