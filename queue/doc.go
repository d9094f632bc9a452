// Package queue owns the durable job queue: a SQLite file (WAL) holding jobs
// under unique dedup keys, their attempt history, schedule cursors and skipped
// instants, the configuration the daemon runs (opaque bytes, SaveConfig), a
// row per running Pool (its job types and process, see Queue.Daemons), and
// the worker Pool that claims, runs, retries, reclaims and purges them.
//
// It knows nothing of cron, TOML or particular task types: a schedule is an
// opaque name and a cursor instant, a job type is a string looked up in the
// Pool's handlers. All SQL of the program lives here.
//
// # Durability
//
// Every state change is one SQLite transaction (enqueues from several
// goroutines at once may share one, each all or nothing in a savepoint of
// its own, each returning after that commit). Writes acknowledged to
// someone outside the process (Enqueue, EnqueueBatch, Retry, SetPaused,
// SaveConfig, an Advance that resumes) are committed with synchronous=FULL and survive
// power loss. Writes the design recovers from are committed with
// synchronous=NORMAL: they survive a crash of the process, and a power loss
// can only roll them back to an earlier committed state. Those are claims
// (the lease expires and the job runs again), completions (the job runs
// again: execution is at least once), heartbeats, reclaims, purges (a purged
// job's key moves to used_keys in the transaction that deletes the job, so
// both are redone together), and Advance and AdvanceBatch (a schedule's rows
// and its cursor are lost together, and the beat materialises the same
// instants again under the same keys).
package queue
