// Package sqlite is the queue's storage engine on one SQLite file (WAL):
// jobs under unique dedup keys, their attempt history, schedule cursors and
// skipped instants, the configuration the daemon runs, a row per running
// pool. *Store implements scheduler/store.Engine; all of its SQL, its
// migrations (embedded beside it) and its SQLite-only operations (Backup,
// Checkpoint, CheckpointPassive, SchemaVersion) live here. Any number of
// processes on one host may open the same file: writers take turns through
// a lock file, and a pool learns of other processes' commits through
// inotify and PRAGMA data_version (Watch).
//
// Speed lives in named places: the statement cache (stmtcache.go), group
// commit of concurrent enqueues (group.go), multi-row completions
// (finishDoneSQL), claims with prefetch and careful look-ahead (claim.go),
// the cache of the pools' type lists (typesCache) and the watch's pause of
// the file watch while the file is busy (Watch).
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
package sqlite
