// Package store is what the queue and its engines share: the engines'
// operations by caller role (Producer, PoolProtocol, BeatProtocol,
// AlarmProtocol, Operator, JobViews, ScheduleViews, joined in Engine); the
// vocabulary of rows and arguments (jobs, attempts, skips, cursors, alarms,
// pools, PoolTx); the rules every engine applies to arguments; and the flow
// both engines would repeat (Base, ClaimJobs, FindUnhandled), written once
// over an engine's statements and transactions. An engine holds its SQL and
// its own mechanisms.
//
// It knows nothing of the queue above it, cron, TOML, task types or any
// engine: github.com/scheduler-run/scheduler/queue/sqlite and
// github.com/scheduler-run/scheduler/queue/postgres implement it, and
// github.com/scheduler-run/scheduler/queue/storetest is the behaviour both
// must show.
package store
