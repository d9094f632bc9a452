// Package queue owns the durable job queue: jobs under unique dedup keys,
// their attempt history, schedule cursors and skipped instants, kept by a
// Store (package github.com/scheduler-run/scheduler/queue/sqlite for a SQLite file), and the worker
// Pool that claims, runs, retries, reclaims and purges them.
//
// It knows nothing of cron, TOML or particular task types: a schedule is an
// opaque name and a cursor instant, a job type is a string looked up in the
// Pool's handlers. It holds no SQL: that lives in the engines, behind
// Store, in the terms of package github.com/scheduler-run/scheduler/queue/store.
package queue
