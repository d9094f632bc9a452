package store

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// ErrNotFound is returned when a job, schedule or key does not exist.
var ErrNotFound = errors.New("not found")

// ErrCursorMoved is returned by Advance when another beat moved the cursor
// since the caller read it.
var ErrCursorMoved = errors.New("schedule cursor moved")

// ErrSchemaTooNew is returned by Open for a database of a newer program.
var ErrSchemaTooNew = errors.New("database schema is newer than this program")

// ErrUnsupported is returned by an operation an engine does not offer; its
// message says what to use instead.
var ErrUnsupported = errors.New("not supported by this storage engine")

// Bounds of the operators' reads.
const (
	MaxList = 1000 // rows of one List, ListSkips or Alarms
	// ListScanBound is how many of the newest jobs (of the state asked, if
	// any) a List by type or schedule looks at. Those filters have no
	// index: one would cost every enqueue a write, for operators' lists.
	ListScanBound = 100000
	// PayloadScanBound is how many of the newest jobs the other filters
	// select a List by payload text reads: payloads have no index.
	PayloadScanBound = 10000
	MaxSkipCount     = 10000 // cap of SkipSummary.Count
)

// A running pool renews its row in the pools table every PresenceEvery.
const (
	PresenceEvery = 30 * time.Second
	// AliveWithin is how recent a pool's row must be for it to count as
	// running (a crashed one too, until then): three missed renewals, so a
	// pool slowed by a busy disk is not reported gone.
	AliveWithin = 3 * PresenceEvery
	// PresenceKept is how long an unclean pool's row is kept, for "last
	// seen", before a starting pool deletes it.
	PresenceKept = 7 * 24 * time.Hour
)

// Enqueued tells what an enqueue did with one NewJob.
type Enqueued struct {
	ID       int64  // the new job's id, or the existing one's for a known key; 0 when Skipped or Purged
	Key      string // the job's dedup key
	Inserted bool   // false when a job with Key already existed
	Skipped  bool   // SkipIfActive found a run of the same schedule item in flight
	Purged   bool   // Key's job ran and was purged since: nothing was inserted
}

// Advance is one step of a schedule: its instants' jobs and skips up to To,
// committed with the cursor's move from From to To.
type Advance struct {
	Schedule string
	From     time.Time // the cursor the caller read; zero when the schedule had none
	To       time.Time // the new cursor; not before From
	Paused   bool      // the pause read with From; the Advance commits only if it holds
	Resume   bool      // with Paused, also resume: the beat takes over from To
	Jobs     []NewJob
	Skips    []Skip
	// FanIns gather runs of Jobs into fan-ins, committed with them.
	FanIns []AdvanceFanIn
}

// AdvanceFanIn are fan-ins whose members are Advance.Jobs[First:First+N]:
// those of them inserted (not skipped) join the first of Specs, and the
// others share them (see InsertFanIns).
type AdvanceFanIn struct {
	Specs    []FanInSpec
	First, N int
}

// AdvanceResult is what AdvanceBatch did with one Advance.
type AdvanceResult struct {
	Jobs []Enqueued // the Advance's jobs' results, in order; nil unless Err is nil
	// Err is nil when the Advance committed. It wraps ErrCursorMoved when
	// the cursor or pause was not as read; other errors mean an invalid
	// Advance or a failed transaction. Either way nothing of it was written.
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
	OldestReady time.Duration            // age of the oldest ready job (0: none)
	ReadySince  map[string]time.Time     // run_at of each type's oldest ready job
	Dead        int
	At          time.Time
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
	// PayloadContains keeps the jobs whose payload holds this text, byte for
	// byte, among the newest PayloadScanBound jobs the other fields select.
	PayloadContains string
	BeforeID        int64 // ids below this, for a list's next page; 0: from the newest
	Limit           int   // at most this many jobs, 1 to MaxList. Default: 50.
}

// Discard selects the dead jobs Operator.Discard ends.
type Discard struct {
	IDs      []int64 // these jobs, at most MaxList; nil: every dead job
	Schedule string  // without IDs: only the dead jobs of this schedule
	By       string  // who discards, for the record (Job.DiscardedBy)
}

// Discarded is what Operator.Discard did.
type Discarded struct {
	IDs     []int64      // the jobs it discarded, in id order
	Refused []RefusedJob // the jobs of Discard.IDs it left, in id order
}

// RefusedJob is a job an operator's action left as it was, and its state
// then: "" when no such job exists.
type RefusedJob struct {
	ID    int64
	State State
}

// InstantOutcome is how the jobs of one instant or manual run stand.
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

// PoolRow is a pool's row as an operator sees it: running, or stopped without
// deleting it.
type PoolRow struct {
	Owner     string
	PID       int
	Host      string
	Version   string
	StartedAt time.Time
	LastSeen  time.Time
	// Config and ConfigAt are the Process's; "" and zero for none.
	Config   string
	ConfigAt time.Time
	Workers  int // how many jobs the pool runs at once; 0 when its row does not say
}

// Alive reports whether d's row was renewed within AliveWithin of now.
func (d PoolRow) Alive(now time.Time) bool { return now.Sub(d.LastSeen) <= AliveWithin }

// Waiting is a type with ready jobs no running pool handles, or a version
// none accepts: they stay pending until one does.
type Waiting struct {
	Type     string
	Version  int           // the version waiting; 0 when no running pool handles Type at all
	Accepted []int         // the versions the running pools accept, when Version is not 0
	Ready    int           // its jobs ready to run
	Oldest   time.Duration // how long its oldest ready job has waited
}

// Unhandled is what the running pools on a queue cannot run.
type Unhandled struct {
	Known   bool      // false when no pool of this version ran on the database
	Pools   int       // running pools (an unclean one until AliveWithin)
	Waiting []Waiting // by type then version, the ready jobs none can run
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
	Skipped   bool  // another node held the maintenance lock: nothing done
}

// Process describes a pool's program, as operators see it in its PoolRow.
type Process struct {
	PID     int
	Host    string
	Version string // the program's version
	// Config is the hex SHA-256 of the program's configuration (see
	// ConfigSHA256), or "". The daemons on a database compare theirs.
	Config   string
	ConfigAt time.Time // when it loaded Config, by the store's clock, to the millisecond
}
