// Package sqlite is the queue's storage engine on one SQLite file (WAL): jobs
// under unique dedup keys, attempts, schedule cursors, skips, the daemon's
// configuration, a row per running pool. *Store implements store.Engine: it
// embeds store.Base, the shared flow, and holds its SQL, its embedded
// migrations and its SQLite-only operations (Tx, EnqueueTx, Backup,
// Checkpoint, CheckpointPassive, SchemaVersion). Any number of processes on
// one host may open the file: writers take turns through a lock file, and a
// pool learns of others' commits through inotify and PRAGMA data_version
// (Watch). It knows nothing of the queue above it, cron, TOML or task types.
//
// Files bear the PostgreSQL engine's names for the same operations, plus a
// few for SQLite's own mechanisms:
//
//	store.go       Config, Open, Close: the writer, the readers, the checkpointer
//	migrate.go     the embedded migrations; what an old file opened read-only lacks
//	db.go          the shared flow's Querier and Tx on database/sql, the write transaction, the Backend Base calls
//	statements.go  the statements of the shared flow (views, operator's writes, alarms, cursors)
//	list.go        the read of List, built from its filter
//	enqueue.go     Enqueue, EnqueueBatch, Tx and EnqueueTx (in the caller's transaction)
//	advance.go     the compare-and-set of many cursors at once, skips
//	pooltx.go      a pool's transaction: results, reclaim, heartbeat, row, claim
//	claim.go       the statements of a claim (store.Claimer)
//	rate.go        the statements of a claim within a rate limit, PauseRate
//	reclaim.go     the reclaim of expired leases
//	wake.go        NextWake, NextReadyAfter
//	pools.go       the pools' rows, Unhandled
//	counts.go      the job counts kept beside the jobs, and the count mark
//	maintain.go    the purge of done jobs, checkpoints, Backup
//	watch.go       Watch: the state machine over the file watch and data_version
//	group.go       group commit of concurrent enqueues
//	stmtcache.go   the statement cache of the writer and the readers
//	turn_*.go      the write turn among the processes on the file
//	filewatch*.go  the watch of the file's directory (inotify)
//
// Speed lives in named places: the statement cache, group commit, multi-row
// completions (finishDoneSQL), prefetching claims that stop before a last
// attempt (store.ClaimJobs), the pools' type lists cache (typesCache) and the
// watch's busy state.
//
// # Durability
//
// Every state change is one transaction (concurrent enqueues may share one,
// each all or nothing in its own savepoint, each returning after the commit).
// Writes acknowledged outside the process (Enqueue, EnqueueBatch, Tx, Retry,
// SetPaused, SaveConfig, RequestCancel, a resuming Advance) commit with
// synchronous=FULL and survive power loss. Writes the design recovers from
// commit with synchronous=NORMAL: they survive a process crash, and power
// loss only rolls them back to an earlier committed state. Those are claims
// (the lease expires and the job runs again), completions (the job runs
// again: execution is at least once), heartbeats, reclaims, purges (a purged
// job's key moves to used_keys in the deleting transaction, so both are
// redone together), and Advance and AdvanceBatch (a schedule's rows and
// cursor are lost together, and the beat materialises the same instants again
// under the same keys).
package sqlite
