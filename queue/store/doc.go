// Package store is the contract between the queue and its storage engines:
// the rows they keep (jobs, attempts, skips, cursors, pools, the running
// configuration), the operations on them, and Store, the interface every
// engine implements. An engine knows nothing of cron, TOML or handlers; it
// keeps rows and applies the rules stated here, each in one transaction.
//
// Two engines implement it: scheduler/queue/sqlite (one file, one host) and
// scheduler/queue/postgres (one database, any number of nodes).
// scheduler/queue/storetest is the behaviour both must show, run against
// each of them.
package store
