package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// TestServerClockIgnoresLocalSteps: the store's clock is the server's,
// carried forward by the node's monotonic clock. A step of the node's wall
// clock, either way, moves none of it; time passing moves it alike; a
// measurement brings it back to the server's.
func TestServerClockIgnoresLocalSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	local := clock.NewFake(t0) // years off the server's clock
	s, err := postgres.Open(ctx, dsn, postgres.Config{Clock: local})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := postgresConn(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// near reports whether c reads the server's clock. The fake monotonic
	// clock stands still while real time passes: the margin is what the
	// test may take, on a loaded machine, between two measurements.
	near := func(what string) {
		t.Helper()
		var server time.Time
		if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&server); err != nil {
			t.Fatal(err)
		}
		if d := server.Sub(s.Clock().Now()); d < -time.Second || d > 2*time.Minute {
			t.Fatalf("%s: the store's clock is %v behind the server's", what, d)
		}
	}
	near("at open")
	before := s.Clock().Now()
	for _, step := range []time.Duration{time.Hour, -2 * time.Hour, 10 * time.Second, -time.Minute} {
		local.Step(step)
		if got := s.Clock().Now(); !got.Equal(before) {
			t.Fatalf("after a local step of %v the store's clock moved by %v", step, got.Sub(before))
		}
	}
	local.Advance(5 * time.Second)
	if got, want := s.Clock().Now(), before.Add(5*time.Second); !got.Equal(want) {
		t.Fatalf("after 5s passed the store's clock moved by %v, want 5s", got.Sub(before))
	}
	if err := s.MeasureClock(ctx); err != nil {
		t.Fatal(err)
	}
	near("measured again after the steps")
}
