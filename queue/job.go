package queue

import (
	"encoding/json"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// AdvanceBatchRows bounds the rows (jobs, skips and the cursor) of the
// Advances that one AdvanceBatch transaction commits (an Advance larger than
// that on its own gets a transaction of its own).
const AdvanceBatchRows = store.AdvanceBatchRows

// The job vocabulary is the storage contract's (package store): the names
// below are the ones callers of the queue use.
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
	// SkipReason says why an instant of a schedule produced no job.
	SkipReason = store.SkipReason
	// Skip records an instant that was deliberately not run.
	Skip = store.Skip
	// Enqueued tells what an enqueue did with one NewJob.
	Enqueued = store.Enqueued
	// Advance is one step of a schedule (see Store.Advance).
	Advance = store.Advance
	// AdvanceResult is what AdvanceBatch did with one Advance.
	AdvanceResult = store.AdvanceResult
	// Cursor is a schedule's durable position.
	Cursor = store.Cursor
	// Stats is a snapshot of the queue for operators.
	Stats = store.Stats
	// Filter selects the jobs List returns.
	Filter = store.Filter
	// InstantOutcome is how the jobs of one instant or manual run stand.
	InstantOutcome = store.InstantOutcome
	// SkipSummary is a schedule's recent skips.
	SkipSummary = store.SkipSummary
	// PoolRow is a pool's row as an operator sees it.
	PoolRow = store.PoolRow
	// Waiting is a job type with ready jobs that no running pool can run.
	Waiting = store.Waiting
	// Unhandled is what the running pools on a queue cannot run.
	Unhandled = store.Unhandled
	// StoredConfig is a configuration file as a daemon loaded it.
	StoredConfig = store.StoredConfig
	// MaintenanceReport counts what Maintain did.
	MaintenanceReport = store.MaintenanceReport
	// Process describes the program a Pool runs in. Zero values in a
	// PoolConfig select the process's own pid and host, and "dev".
	Process = store.Process
	// AlarmKind says what an alarm reports.
	AlarmKind = store.AlarmKind
	// Alarm is a stored alarm.
	Alarm = store.Alarm
	// NewAlarm is an alarm to raise.
	NewAlarm = store.NewAlarm
	// OpenAlarm is an open alarm with its job's state.
	OpenAlarm = store.OpenAlarm
	// AlarmMark is how far a schedule's alarms were evaluated.
	AlarmMark = store.AlarmMark
	// AlarmBatch is one transaction of the alarms' evaluation.
	AlarmBatch = store.AlarmBatch
	// InstantJob is a job of an instant with its first start.
	InstantJob = store.InstantJob
)

// Alarm kinds.
const (
	AlarmLate      = store.AlarmLate
	AlarmMissed    = store.AlarmMissed
	AlarmDead      = store.AlarmDead
	AlarmMisfire   = store.AlarmMisfire
	AlarmRecovered = store.AlarmRecovered
)

// NotifyKeyPrefix starts the dedup key of every notification job: a
// pool's finished events tell notifications from other jobs by it.
const NotifyKeyPrefix = store.NotifyKeyPrefix

// OpensAlarm reports whether an alarm of kind k stays open until a
// recovered alarm closes it (late, missed, dead).
func OpensAlarm(k AlarmKind) bool { return store.OpensAlarm(k) }

// MaxAlarmRows bounds the rows of one read of the alarms' evaluation.
const MaxAlarmRows = store.MaxAlarmRows

// AlarmKey returns the unique key of an alarm (see store.AlarmKey).
func AlarmKey(schedule, item string, at time.Time, jobID int64, kind AlarmKind) string {
	return store.AlarmKey(schedule, item, at, jobID, kind)
}

// NotifyKey returns the dedup key of the notification job of an alarm for
// a task: NotifyKeyPrefix, the alarm's key, "|" and the task.
func NotifyKey(alarmKey, task string) string { return store.NotifyKey(alarmKey, task) }

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

// Skip reasons.
const (
	SkipMisfire = store.SkipMisfire
	SkipOverlap = store.SkipOverlap
	SkipPaused  = store.SkipPaused
	SkipDST     = store.SkipDST
)

// Limits and defaults of the contract.
const (
	DefaultMaxAttempts = store.DefaultMaxAttempts
	MaxOutput          = store.MaxOutput
	MaxList            = store.MaxList
	ListScanBound      = store.ListScanBound
	MaxSkipCount       = store.MaxSkipCount
	AliveWithin        = store.AliveWithin
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

// ConfigSHA256 returns the hex SHA-256 of a configuration file's bytes.
func ConfigSHA256(data []byte) string { return store.ConfigSHA256(data) }
