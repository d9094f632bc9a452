package postgres_test

import (
	"context"
	"testing"
	"time"

	"scheduler/clock"
	"scheduler/queue"
	"scheduler/queue/postgres"
)

var _ queue.Store = (*postgres.Store)(nil)

var t0 = time.Date(2026, 3, 8, 6, 0, 0, 0, time.UTC)

// open opens a store on dsn with the fake clock c, closed at the end of t.
func open(t *testing.T, dsn string, c clock.Clock) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), dsn, postgres.Config{Clock: c, LocalClock: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
