//go:build unix

package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/sqlite"
)

// cpuNow is the CPU time the process has used, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDrainCPU is BenchmarkDrain (with prefetch, 1 and 8 workers)
// measured in the CPU the process uses per job, from the pool's start to
// its return, rather than in wall time alone: on a machine shared with
// other work, wall time spreads far more than CPU time.
func BenchmarkDrainCPU(b *testing.B) {
	for _, workers := range []int{1, 8} {
		b.Run(fmt.Sprint("workers=", workers), func(b *testing.B) {
			const jobs = 5000
			ctx := context.Background()
			var total int
			var cpu time.Duration
			var transactions int64
			for b.Loop() {
				b.StopTimer()
				q := benchQueue(b, sqlite.Config{})
				batch := make([]NewJob, jobs)
				for i := range batch {
					batch[i] = NewJob{Type: "t", Key: fmt.Sprint(i)}
				}
				if _, err := q.EnqueueBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
				var ran atomic.Int64
				allRan := make(chan struct{})
				p, _ := NewPool(q, PoolConfig{Workers: workers, MaintenanceEvery: -1})
				p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
					if ran.Add(1) == jobs {
						close(allRan)
					}
					return nil
				}), TypeConfig{})
				b.StartTimer()
				c0 := cpuNow()
				runCtx, cancel := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() { p.Run(runCtx); close(done) }()
				<-allRan
				cancel()
				<-done
				cpu += cpuNow() - c0
				transactions += p.commits.Load()
				b.StopTimer()
				total += jobs
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(total), "cpu-us/job")
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(float64(transactions)/float64(total), "txs/job")
		})
	}
}
