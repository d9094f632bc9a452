package queue

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/sqlite"
)

func benchQueue(b *testing.B, cfg sqlite.Config) *Client {
	b.Helper()
	q, err := openSQLite(context.Background(), filepath.Join(b.TempDir(), "q.db"), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	return q
}

// BenchmarkEnqueue is one job per call, one fsynced transaction each, on an
// empty used_keys and on one of a million keys.
func BenchmarkEnqueue(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  sqlite.Config
		used int // keys of purged jobs in used_keys
	}{{"used=0", sqlite.Config{}, 0}, {"used=1e6", sqlite.Config{}, 1e6}} {
		b.Run(tc.name, func(b *testing.B) {
			q := benchQueue(b, tc.cfg)
			ctx := context.Background()
			if tc.used > 0 {
				if _, err := rawDB(b, q).ExecContext(ctx, `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?)
					INSERT INTO used_keys SELECT 'nightly-report|customer=' || i || '|2026-03-01T03:00:00Z', i FROM c`, tc.used); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				if _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: fmt.Sprint(i)}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkEnqueueBatch100 is 100 jobs per transaction.
func BenchmarkEnqueueBatch100(b *testing.B) {
	q := benchQueue(b, sqlite.Config{})
	ctx := context.Background()
	batch := make([]NewJob, 100)
	n := 0
	for b.Loop() {
		for i := range batch {
			batch[i] = NewJob{Type: "t", Key: fmt.Sprint(n)}
			n++
		}
		if _, err := q.EnqueueBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkDrain measures claim+run+complete of no-op jobs with 1, 8 and 32
// workers; the clock stops when the database shows every job done. The
// waiting cases put ready jobs of a type the pool has no handler for at the
// head of the claim order: each claim walks past them.
func BenchmarkDrain(b *testing.B) {
	// Prefetch -1 is off; 0 is the default (16 per worker, while jobs are short).
	for _, tc := range []struct{ workers, prefetch, waiting int }{{1, 0, 0}, {8, 0, 0}, {32, 0, 0}, {1, -1, 0}, {8, -1, 0}, {32, -1, 0}, {8, 0, 100}, {8, 0, 1000}} {
		workers := tc.workers
		name := fmt.Sprint("workers=", workers, "/prefetch=", tc.prefetch)
		if tc.waiting > 0 {
			name += fmt.Sprint("/waiting=", tc.waiting)
		}
		b.Run(name, func(b *testing.B) {
			const jobs = 5000
			ctx := context.Background()
			var total int
			for b.Loop() {
				b.StopTimer()
				q := benchQueue(b, sqlite.Config{})
				batch := make([]NewJob, jobs)
				for i := range batch {
					batch[i] = NewJob{Type: "t", Key: fmt.Sprint(i)}
				}
				for i := range tc.waiting {
					batch = append(batch, NewJob{Type: "unhandled", Key: fmt.Sprint("w", i), RunAt: time.Now().Add(-time.Hour)})
				}
				if _, err := q.EnqueueBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
				var ran atomic.Int64
				allRan := make(chan struct{})
				p, _ := NewPool(q, PoolConfig{Workers: workers, Prefetch: tc.prefetch, MaintenanceEvery: -1})
				p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
					if ran.Add(1) == jobs {
						close(allRan)
					}
					return nil
				}), TypeConfig{})
				b.StartTimer()
				runCtx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { p.Run(runCtx); close(done) }()
				<-allRan
				for {
					s, err := q.Stats(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if s.Total[StateDone] == jobs {
						break
					}
					time.Sleep(100 * time.Microsecond) // polling the result, not synchronising
				}
				b.StopTimer()
				cancel()
				<-done
				total += jobs
				b.StartTimer()
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkLatency measures in-process enqueue -> handler start on an idle
// pool, one job at a time.
func BenchmarkLatency(b *testing.B) {
	q := benchQueue(b, sqlite.Config{})
	ctx := context.Background()
	started := make(chan time.Time, 1)
	p, _ := NewPool(q, PoolConfig{Workers: 8, MaintenanceEvery: -1})
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error { started <- time.Now(); return nil }), TypeConfig{})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { p.Run(runCtx); close(done) }()
	defer func() { cancel(); <-done }()
	var sum time.Duration
	i := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: fmt.Sprint(i)}); err != nil {
			b.Fatal(err)
		}
		sum += (<-started).Sub(t0)
		i++
	}
	b.ReportMetric(float64(sum.Microseconds())/float64(i), "µs/start")
}
