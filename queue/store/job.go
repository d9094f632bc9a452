package store

import (
	"encoding/json"
	"time"
)

// State is a job's place in its life cycle.
type State string

// The states of a job: pending -> running -> done, back to pending for a
// retry, or dead when it must not run again without a person. A person ends
// a dead job discarded when it is not to run again (see Operator.Discard).
const (
	StatePending   State = "pending"
	StateRunning   State = "running"
	StateDone      State = "done"
	StateDead      State = "dead"
	StateCancelled State = "cancelled"
	StateDiscarded State = "discarded"
)

// Valid reports whether s is one of the states above.
func (s State) Valid() bool {
	switch s {
	case StatePending, StateRunning, StateDone, StateDead, StateCancelled, StateDiscarded:
		return true
	}
	return false
}

// DefaultMaxAttempts is the attempt limit of a job enqueued without one.
const DefaultMaxAttempts = 5

// NewJob describes a job to enqueue. Only Type is required.
type NewJob struct {
	// Key is the dedup key: at most one job with a key ever exists. Empty
	// means a fresh random key.
	Key         string
	Type        string          // selects the handler
	Payload     json.RawMessage // JSON input; empty means {}
	Priority    int             // higher runs first among ready jobs
	RunAt       time.Time       // earliest start; zero means now
	MaxAttempts int             // zero means DefaultMaxAttempts
	Schedule    string          // opaque label of the recurring schedule; "" for one-off jobs
	Item        string          // fan-out item within Schedule, or ""
	ScheduledAt time.Time       // the instant the job stands for, or zero
	// Version is the payload format's version; only pools accepting it
	// for Type run the job (see Claim.Versions). Zero means 1.
	Version int
	// SkipIfActive, with Schedule, records a SkipOverlap skip instead of
	// inserting while a job of the same Schedule and Item is pending or
	// running.
	SkipIfActive bool
	AlarmKey     string // the alarm a notification job hands to a notify task
	// Trace is the W3C traceparent of the span that enqueued the job (a
	// tick, a trigger, a program's span), or "": each attempt's span is
	// its child. An enqueue fills it from ctx when empty (see TraceContext).
	Trace string
}

// Job is a stored job.
type Job struct {
	ID          int64
	Key         string
	Type        string
	Payload     json.RawMessage
	State       State
	Attempt     int // attempts started so far, counting the current one
	MaxAttempts int
	Priority    int
	Version     int // the payload's version (see NewJob.Version), at least 1
	RunAt       time.Time
	Schedule    string
	Item        string
	ScheduledAt time.Time // zero when the job stands for no instant
	LeaseUntil  time.Time // zero unless running
	Owner       string    // the worker pool holding the lease; empty unless running
	LastError   string
	CreatedAt   time.Time
	StartedAt   time.Time // start of the latest attempt
	FinishedAt  time.Time // when the job reached done or dead
	// RetriedAt is when an operator last made the dead job pending, or
	// zero; its give_up_after budget counts from it when later.
	RetriedAt time.Time
	AlarmKey  string // see NewJob.AlarmKey
	// FanInID is the fan-in the job is a member of (see NewFanIn), or 0;
	// set on claimed jobs.
	FanInID int64
	// DiscardedAt and DiscardedBy say when and by whom the dead job was
	// discarded; zero and "" unless it is discarded.
	DiscardedAt time.Time
	DiscardedBy string
	// Trace is NewJob.Trace; set on claimed jobs.
	Trace string

	output []byte
}

// SetOutput records the current attempt's output, whose tail (at most
// MaxOutput bytes) the history keeps. A handler calls it before returning; it
// is not safe for concurrent use.
func (j *Job) SetOutput(b []byte) {
	if len(b) > MaxOutput {
		b = b[len(b)-MaxOutput:]
	}
	j.output = append(j.output[:0], b...)
}

// Output returns what SetOutput recorded for the current attempt.
func (j *Job) Output() []byte { return j.output }

// MaxOutput is how many bytes of an attempt's output and error text are kept.
const MaxOutput = 16 << 10

// Attempt is one recorded run of a job.
type Attempt struct {
	JobID      int64
	Number     int
	Worker     string
	StartedAt  time.Time
	FinishedAt time.Time
	Outcome    Outcome
	Error      string
	Output     string
}

// Outcome is how an attempt ended.
type Outcome string

// Attempt outcomes.
const (
	OutcomeDone         Outcome = "done"          // the handler succeeded
	OutcomeRetry        Outcome = "retry"         // failed; another attempt is scheduled
	OutcomeDead         Outcome = "dead"          // failed for the last time
	OutcomeReleased     Outcome = "released"      // interrupted by shutdown; the attempt was given back
	OutcomeLeaseExpired Outcome = "lease_expired" // the worker vanished; reclaimed
	OutcomeStale        Outcome = "stale"         // finished after its lease was reclaimed; result discarded
	OutcomeCancelled    Outcome = "cancelled"     // stopped by RequestCancel; the job is cancelled
)

// SkipReason says why an instant of a schedule produced no job.
type SkipReason string

// Skip reasons.
const (
	SkipMisfire SkipReason = "misfire" // missed while down, dropped by the catch-up policy
	SkipOverlap SkipReason = "overlap" // the previous run of the same item was still pending or running
	SkipPaused  SkipReason = "paused"  // the schedule was paused
	SkipDST     SkipReason = "dst"     // a repeated wall time in a daylight-saving fall-back
)

// Skip records an instant that was deliberately not run.
type Skip struct {
	Schedule    string
	Item        string
	ScheduledAt time.Time
	Reason      SkipReason
	RecordedAt  time.Time
}

// LastAttempt reports whether the claimed job runs its last attempt, so a
// failure or a lost lease makes it dead.
func (j *Job) LastAttempt() bool { return j.Attempt >= j.MaxAttempts }
