// Package store is what the queue and its storage engines share: the
// engines' operations by the role of their callers (Producer,
// PoolProtocol, BeatProtocol, AlarmProtocol, Operator, JobViews,
// ScheduleViews, joined in Engine); the vocabulary of their rows and
// arguments (jobs, attempts, skips, cursors, alarms, pools, a pool's
// PoolTx); the rules every engine applies to its arguments; and the flow
// both engines would otherwise repeat (Base, ClaimJobs, FindUnhandled),
// written once over the statements and transactions an engine gives it.
// An engine holds its SQL and the mechanisms that are its own.
//
// It knows nothing of the queue above it, of cron, TOML or task types, nor
// of any engine: github.com/scheduler-run/scheduler/queue/sqlite and
// github.com/scheduler-run/scheduler/queue/postgres implement it, and
// github.com/scheduler-run/scheduler/queue/storetest is the behaviour
// both must show, run against each of them.
package store
