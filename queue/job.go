package queue

import (
	"encoding/json"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The job vocabulary of package store, under the names a program uses.
// Schedules, skips, alarms and pools are named from package store.
type (
	State    = store.State    // a job's place in its life cycle
	NewJob   = store.NewJob   // a job to enqueue; only Type is required
	Job      = store.Job      // a stored job
	Attempt  = store.Attempt  // one recorded run of a job
	Outcome  = store.Outcome  // how an attempt ended
	Enqueued = store.Enqueued // what an enqueue did with one NewJob
	Filter   = store.Filter   // selects the jobs List returns
	// Discard selects the dead jobs Client.Discard ends; Discarded says
	// what it did, RefusedJob names a job it left and its state.
	Discard    = store.Discard
	Discarded  = store.Discarded
	RefusedJob = store.RefusedJob
	Stats      = store.Stats // a snapshot of the queue for operators
	// Process describes a Pool's program; zero values in a PoolConfig
	// select the process's own pid and host, and "dev".
	Process = store.Process
	// NewFanIn is jobs enqueued together with one job that runs once every
	// one of them has ended (Client.EnqueueFanIn).
	NewFanIn      = store.NewFanIn
	FanIn         = store.FanIn         // a stored fan-in: its counts and state
	FanInEnqueued = store.FanInEnqueued // what an EnqueueFanIn did
	Require       = store.Require       // what a fan-in's members must achieve
)

// What a fan-in's members must achieve for its job to run.
const (
	RequireEnded = store.RequireEnded // every member ended, whatever its outcome
	RequireDone  = store.RequireDone  // every member ended done; else the fan-in is skipped
)

// The states of a job.
const (
	StatePending   = store.StatePending
	StateRunning   = store.StateRunning
	StateDone      = store.StateDone
	StateDead      = store.StateDead
	StateCancelled = store.StateCancelled
	StateDiscarded = store.StateDiscarded
)

// Attempt outcomes.
const (
	OutcomeDone         = store.OutcomeDone
	OutcomeRetry        = store.OutcomeRetry
	OutcomeDead         = store.OutcomeDead
	OutcomeReleased     = store.OutcomeReleased
	OutcomeLeaseExpired = store.OutcomeLeaseExpired
	OutcomeStale        = store.OutcomeStale
	OutcomeCancelled    = store.OutcomeCancelled
)

// Limits and defaults of a job.
const (
	DefaultMaxAttempts = store.DefaultMaxAttempts
	MaxOutput          = store.MaxOutput
	MaxList            = store.MaxList
	MaxPayloadSize     = store.MaxPayloadSize  // bytes (1 MiB)
	MaxPayloadDepth    = store.MaxPayloadDepth // nesting of objects and arrays
)

// CheckPayload reports a payload no enqueue accepts: over MaxPayloadSize
// (ErrPayloadTooLarge), deeper than MaxPayloadDepth (ErrPayloadTooDeep), or
// not JSON (ErrPayloadNotJSON). Every enqueue checks with it first.
func CheckPayload(p json.RawMessage) error { return store.CheckPayload(p) }
