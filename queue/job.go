package queue

import (
	"encoding/json"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The vocabulary of jobs is the engines' (package store): the names below
// are those a program that enqueues, runs and inspects jobs uses. The
// vocabulary of schedules, skips, alarms and pools is named from package
// store.
type (
	// State is a job's place in its life cycle.
	State = store.State
	// NewJob describes a job to enqueue. Only Type is required.
	NewJob = store.NewJob
	// Job is a stored job.
	Job = store.Job
	// Attempt is one recorded run of a job.
	Attempt = store.Attempt
	// Outcome is how an attempt ended.
	Outcome = store.Outcome
	// Enqueued tells what an enqueue did with one NewJob.
	Enqueued = store.Enqueued
	// Filter selects the jobs List returns.
	Filter = store.Filter
	// Stats is a snapshot of the queue for operators.
	Stats = store.Stats
	// Process describes the program a Pool runs in. Zero values in a
	// PoolConfig select the process's own pid and host, and "dev".
	Process = store.Process
)

// The states of a job.
const (
	StatePending   = store.StatePending
	StateRunning   = store.StateRunning
	StateDone      = store.StateDone
	StateDead      = store.StateDead
	StateCancelled = store.StateCancelled
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
	// MaxPayloadSize bounds a job's payload, in bytes (1 MiB).
	MaxPayloadSize = store.MaxPayloadSize
	// MaxPayloadDepth bounds the nesting of a payload's objects and
	// arrays.
	MaxPayloadDepth = store.MaxPayloadDepth
)

// CheckPayload reports a payload that no enqueue accepts: over
// MaxPayloadSize (ErrPayloadTooLarge), nested deeper than MaxPayloadDepth
// (ErrPayloadTooDeep), or not JSON (ErrPayloadNotJSON). Enqueue,
// EnqueueBatch, Advance and the notifications of alarms check every payload
// with it before they write anything.
func CheckPayload(p json.RawMessage) error { return store.CheckPayload(p) }
