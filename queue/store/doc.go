// Package store is the vocabulary shared by the queue and its storage
// engines: the rows they keep (jobs, attempts, skips, cursors, pools, the
// running configuration) and the operations' arguments and results, such as
// a pool's Trip. The queue declares the interface an engine implements,
// store.Engine, in these terms; an engine imports this package and knows
// nothing of the queue above it, of cron, TOML or handlers.
//
// Two engines implement it: github.com/scheduler-run/scheduler/queue/sqlite (one file, one host) and
// github.com/scheduler-run/scheduler/queue/postgres (one database, any number of nodes).
// github.com/scheduler-run/scheduler/queue/storetest is the behaviour both must show, run against
// each of them.
package store
