package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/sqlite/sqlitetest"
)

// millionStore opens a store whose file holds 1,000,000 done jobs and 1,000
// ready ones, built once per benchmark.
func millionStore(b *testing.B) *Store {
	b.Helper()
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start.Add(time.Hour))
	path := filepath.Join(b.TempDir(), "q.db")
	q, err := Open(ctx, path, Config{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	q.Close()
	if err := sqlitetest.FillMillion(ctx, path, 1_000_000, 1000, start); err != nil {
		b.Fatal(err)
	}
	if q, err = Open(ctx, path, Config{Clock: clk}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return q
}

// BenchmarkStatsMillion measures what -status and a metrics scrape read of
// a database of 1,000,000 jobs: Stats from job_counts (and the oldest ready
// job of each type, from the claim index), against counting every row as
// Stats did before job_counts; and the last success and completion of ten
// schedules.
func BenchmarkStatsMillion(b *testing.B) {
	q := millionStore(b)
	ctx := context.Background()
	schedules := []string{"schedule0", "schedule1", "schedule2", "schedule3", "schedule4",
		"schedule5", "schedule6", "schedule7", "schedule8", "schedule9"}
	b.Run("Stats", func(b *testing.B) {
		for b.Loop() {
			st, err := q.Stats(ctx)
			if err != nil || st.Total["done"] != 1_000_000 || st.Total["pending"] != 1000 {
				b.Fatalf("Stats = %v, %v", st.Total, err)
			}
		}
	})
	b.Run("count-every-row", func(b *testing.B) {
		for b.Loop() {
			if _, err := q.CountJobs(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Finishes", func(b *testing.B) {
		for b.Loop() {
			f, err := q.Finishes(ctx, schedules)
			if err != nil || len(f) != len(schedules) {
				b.Fatalf("Finishes = %d schedules, %v", len(f), err)
			}
		}
	})
	b.Run("Handlers", func(b *testing.B) {
		for b.Loop() {
			if _, err := q.Unhandled(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
