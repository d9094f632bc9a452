// Package queue is the durable job queue as a program uses it: a Client
// that enqueues jobs under unique dedup keys, reads jobs, attempts,
// schedules, skips and alarms, and acts as an operator does; and the
// worker Pool that claims, runs, retries, reclaims and purges jobs.
//
// The rows live in an engine the program opens and hands to New: package
// github.com/scheduler-run/scheduler/queue/sqlite or
// github.com/scheduler-run/scheduler/queue/postgres. This package imports
// neither and holds no SQL: it speaks to an engine through the roles of
// package github.com/scheduler-run/scheduler/queue/store.
//
// It knows nothing of cron, TOML or task types: a schedule is a name and a
// cursor instant, a job type a string looked up in the Pool's handlers.
package queue
