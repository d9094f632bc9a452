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
//
// # Enqueue
//
// Client.Enqueue adds a NewJob under its dedup key: a key once used never
// makes a second job (see Example). Client.EnqueueArgs enqueues a struct of
// your own, marshalled to the payload, its type named by a Kind method
// (JobArgs); MarshalArgs makes the same NewJob for EnqueueBatch and for an
// engine's EnqueueTx, which enqueues in your own transaction so that a job
// commits with your writes or not at all (sqlite.EnqueueTx,
// postgres.EnqueueTx).
//
// # Handlers
//
// A Handler runs the jobs of one type; its error decides their fate:
// nil is done, Permanent(err) dead at once, RetryAfter(d, err) retried
// after d, anything else retried with the type's backoff until the job's
// MaxAttempts. A typed handler, WorkFunc[T], gets the payload decoded into
// T and returns the attempt's output; Register registers one in a Pool
// under T's Kind (see ExampleRegister). A payload that does not decode is a
// permanent *ArgsError naming the job type, T and the field. The untyped
// HandlerFunc gets the raw JSON and sets its output with Job.SetOutput.
//
// # Inspect and operate
//
// The Client reads jobs (Job, JobByKey, List, Attempts, Dead), counts
// (Stats) and schedules' rows, and acts as an operator does (Retry,
// RequestCancel); see ExampleClient_List.
//
// # Tests
//
// Package queuetest asserts that a job was enqueued, on a Client or in
// your transaction, and runs a handler's attempt on a clock.Fake without a
// database (through RunAttempt); package schedule/scheduletest runs a
// schedules.toml's beat tick by tick.
package queue
