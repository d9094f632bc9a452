// Package postgres is the queue's storage engine on a PostgreSQL database
// shared by any number of nodes. *Store implements store.Engine: it embeds
// store.Base, the shared flow, and holds its SQL and what many nodes need:
// claims that skip rows another node holds (FOR UPDATE SKIP LOCKED), a clock
// following the server's, wake-ups by LISTEN/NOTIFY, and pipelined batches
// that make a pool's transaction two round trips. It knows nothing of the
// queue above it, cron, TOML or task types.
//
// Files bear the SQLite engine's names for the same operations:
//
//	store.go       Config, Open, Close: the pool of connections
//	migrate.go     the embedded migrations, under an advisory lock; what an old schema opened read-only lacks
//	db.go          the shared flow's Querier and Tx on pgx, the Backend Base calls
//	statements.go  the statements of the shared flow (views, operator's writes, alarms, cursors)
//	list.go        the read of List, built from its filter
//	enqueue.go     Enqueue, EnqueueBatch, EnqueueTx (in the caller's transaction)
//	advance.go     the compare-and-set of many cursors at once, skips
//	pooltx.go      a pool's transaction: results, reclaim, heartbeat, row, claim
//	claim.go       the statements of a claim (store.Claimer)
//	rate.go        the statements of a claim within a rate limit, PauseRate
//	reclaim.go     the reclaim of expired leases
//	wake.go        NextWake, NextReadyAfter
//	pools.go       the pools' rows, Unhandled
//	counts.go      the job counts kept beside the jobs, spread over slots
//	maintain.go    the purge of done jobs, the maintenance lock
//	views.go       the reads answered in one round trip (SkipSummary)
//	watch.go       Watch: LISTEN on the schema's channel
//	notify.go      the NOTIFY after a commit, one at a time per store
//	clock.go       the server's clock, measured and followed
//
// # Examples
//
// ExampleEnqueueTx enqueues in the program's own pgx transaction. The
// package's examples need a database: they run where
// SCHEDULER_TEST_POSTGRES names one, as .ci/run always does, each on a
// schema of its own, with their output checked. An example cannot skip
// itself, and printing its expected output without a database would check
// nothing, so without the variable the package's TestMain leaves the
// examples out (-test.skip) and says so on stderr, as its tests skip.
package postgres
