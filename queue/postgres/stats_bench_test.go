package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
)

// BenchmarkStatsMillion measures what -status and a metrics scrape read of
// a database of 1,000,000 jobs: Stats from job_counts (and the oldest ready
// job of each type, from the claim index), against counting every row as
// Stats did before job_counts; and the last success and completion of ten
// schedules.
func BenchmarkStatsMillion(b *testing.B) {
	ctx := context.Background()
	dsn := pgtest.DSN(b)
	s, err := postgres.Open(ctx, dsn, postgres.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if err := pgtest.FillMillion(ctx, dsn, 1_000_000, 1000, start); err != nil {
		b.Fatal(err)
	}
	schedules := []string{"schedule0", "schedule1", "schedule2", "schedule3", "schedule4",
		"schedule5", "schedule6", "schedule7", "schedule8", "schedule9"}
	b.Run("Stats", func(b *testing.B) {
		for b.Loop() {
			st, err := s.Stats(ctx)
			if err != nil || st.Total["done"] != 1_000_000 || st.Total["pending"] != 1000 {
				b.Fatalf("Stats = %v, %v", st.Total, err)
			}
		}
	})
	b.Run("count-every-row", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.CountJobs(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Finishes", func(b *testing.B) {
		for b.Loop() {
			f, err := s.Finishes(ctx, schedules)
			if err != nil || len(f) != len(schedules) {
				b.Fatalf("Finishes = %d schedules, %v", len(f), err)
			}
		}
	})
	b.Run("Handlers", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Unhandled(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
