package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/queue/storetest"
)

// *sqlite.Store is a store.Engine. The assertion lives in a test: the engine
// does not import the queue above it.
var _ store.Engine = (*sqlite.Store)(nil)

// TestStore runs the conformance suite on SQLite files. A second store on
// the same database is a second Open of the file, which locks and watches
// it as another process would.
func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, openFiles(sqlite.Config{}))
}

// openFiles opens stores on a file of the test's own with cfg and the
// clock given.
func openFiles(cfg sqlite.Config) storetest.OpenFunc {
	return func(t *testing.T, c clock.Clock) (store.Engine, func(clock.Clock) store.Engine) {
		path := filepath.Join(t.TempDir(), "q.db")
		open := func(c clock.Clock) store.Engine {
			cfg := cfg
			cfg.Clock = c
			s, err := sqlite.Open(context.Background(), path, cfg)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open(c), open
	}
}
