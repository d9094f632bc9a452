package sqlite_test

import (
	"scheduler/queue"
	"scheduler/queue/sqlite"
)

// *sqlite.Store is a queue.Store. The assertion lives in a test: the engine
// does not import the queue above it.
var _ queue.Store = (*sqlite.Store)(nil)
