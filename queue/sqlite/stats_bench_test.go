package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"scheduler/clock"
)

// millionSQL fills the jobs table in one statement: ?1 done jobs of four
// types, one in a hundred of ten schedules, finished one millisecond apart
// from ?2, then ?3 ready jobs. The insert trigger counts them.
const millionSQL = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 + ?3)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, started_at, finished_at)
SELECT 'bulk|' || i, 'type' || (i % 4), '{}', CASE WHEN i <= ?1 THEN 'done' ELSE 'pending' END, CASE WHEN i <= ?1 THEN 1 ELSE 0 END, 5, 0,
	?2 + i, CASE WHEN i % 100 = 0 THEN 'schedule' || (i / 100 % 10) END, '', CASE WHEN i % 100 = 0 THEN ?2 + i END,
	?2 + i, CASE WHEN i <= ?1 THEN ?2 + i END, CASE WHEN i <= ?1 THEN ?2 + i END
FROM n`

// millionStore opens a store whose file holds 1,000,000 done jobs and 1,000
// ready ones, built once per benchmark.
func millionStore(b *testing.B) *Store {
	b.Helper()
	ctx := context.Background()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start.Add(time.Hour))
	q, err := Open(ctx, filepath.Join(b.TempDir(), "q.db"), Config{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	if _, err := q.w.ExecContext(ctx, millionSQL, 1_000_000, start.UnixMilli(), 1000); err != nil {
		b.Fatal(err)
	}
	if _, err := q.w.ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
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
			if _, err := q.Handlers(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
