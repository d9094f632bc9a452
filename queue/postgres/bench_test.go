package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/pgproc"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
)

func benchStore(b *testing.B) *postgres.Store {
	b.Helper()
	s, err := postgres.Open(context.Background(), pgtest.DSN(b), postgres.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkEnqueueBatch enqueues batches of 1,000 jobs with keys of their
// own; it reports jobs per second.
func BenchmarkEnqueueBatch(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	const batch = 1000
	jobs := make([]store.NewJob, batch)
	n := 0
	b.ResetTimer()
	for b.Loop() {
		for i := range jobs {
			jobs[i] = store.NewJob{Key: fmt.Sprintf("bench|%d", n), Type: "t", Payload: []byte(`{"n":1}`)}
			n++
		}
		if _, err := s.EnqueueBatch(ctx, jobs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueue enqueues one job per call, from 8 goroutines.
func BenchmarkEnqueue(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Enqueue(ctx, store.NewJob{Type: "t"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkDrain enqueues b.N jobs, then drains them with a loop of PoolTxs
// that each complete the jobs of the last and claim up to 256; it reports
// jobs claimed and completed per second, and the CPU per job of the process
// (cpu-us/job) and of the server (srv-us/job: its background processes and
// the store's backends, when it runs on this host). On a machine shared with
// other work the CPU figures spread far less than the rate.
func BenchmarkDrain(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	jobs := make([]store.NewJob, 0, 5000)
	for i := 0; i < b.N; i += cap(jobs) {
		jobs = jobs[:0]
		for range min(cap(jobs), b.N-i) {
			jobs = append(jobs, store.NewJob{Type: "t"})
		}
		if _, err := s.EnqueueBatch(ctx, jobs); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start, c0, s0 := time.Now(), cpuNow(), pgproc.Read()
	var results []store.Result
	done := 0
	for {
		now := s.Clock().Now()
		res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: "bench", Now: now, Results: results,
			Claim: &store.Claim{Lease: time.Minute, N: 256, Types: []string{"t"}}})
		if err != nil {
			b.Fatal(err)
		}
		done += len(results)
		results = results[:0]
		if len(res.Claimed) == 0 {
			break
		}
		for _, j := range res.Claimed {
			results = append(results, store.Result{Job: j, Worker: "w", Outcome: store.OutcomeDone, Started: now, Finished: now})
		}
	}
	elapsed, cpu, s1 := time.Since(start), cpuNow()-c0, pgproc.Read()
	b.StopTimer()
	if done != b.N {
		b.Fatalf("%d jobs done, want %d", done, b.N)
	}
	b.ReportMetric(float64(done)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(done), "cpu-us/job")
	mine := map[int]bool{}
	for _, pid := range postgres.BackendPIDs(ctx, s) {
		mine[pid] = true
	}
	if srv := pgproc.CPU(s0, s1, func(p pgproc.Process) bool { return mine[p.PID] }); srv >= 0 {
		b.ReportMetric(float64(srv.Microseconds())/float64(done), "srv-us/job")
	}
}
