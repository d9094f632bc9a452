// Package queue is the durable job queue as a program uses it: a Client
// that enqueues jobs under unique dedup keys, reads them, their attempts,
// schedules, skips and alarms, and acts on them as an operator does; and
// the worker Pool that claims, runs, retries, reclaims and purges them.
//
// The rows live in a storage engine that the program opens and hands to
// New: package github.com/scheduler-run/scheduler/queue/sqlite for a SQLite
// file, package github.com/scheduler-run/scheduler/queue/postgres for a
// PostgreSQL database. This package imports neither: it speaks to an
// engine through the roles of package
// github.com/scheduler-run/scheduler/queue/store, and holds no SQL.
//
// It knows nothing of cron, TOML or particular task types: a schedule is an
// opaque name and a cursor instant, a job type is a string looked up in the
// Pool's handlers.
package queue
