package postgres_test

import (
	"context"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/queue/storetest"
)

// TestConformance runs the conformance suite, the behaviour every engine
// must show, on PostgreSQL: each of its tests on a schema of its own. A
// second store on the same database is a second Open of the schema, as
// another node's.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, c clock.Clock) (store.Engine, func(clock.Clock) store.Engine) {
		dsn := pgtest.DSN(t)
		open := func(c clock.Clock) store.Engine {
			s, err := postgres.Open(context.Background(), dsn, postgres.Config{Clock: c, LocalClock: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
		return open(c), open
	})
}
