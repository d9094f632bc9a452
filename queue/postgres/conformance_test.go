package postgres_test

import (
	"context"
	"testing"

	"scheduler/clock"
	"scheduler/queue"
	"scheduler/queue/postgres"
	"scheduler/queue/postgres/pgtest"
	"scheduler/queue/storetest"
)

// TestConformance runs the conformance suite, the behaviour every engine
// must show, on PostgreSQL: each of its tests on a schema of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, c clock.Clock) queue.Store {
		s, err := postgres.Open(context.Background(), pgtest.DSN(t), postgres.Config{Clock: c, LocalClock: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
