package schedule

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/schedule/internal/bigconfig"
)

// benchmarkPass measures one beat pass per minute of fake time, each
// materialising rowsPerPass jobs, on a SQLite file and, when
// SCHEDULER_TEST_POSTGRES is set, on a PostgreSQL schema of its own, and
// reports jobs written per second.
func benchmarkPass(b *testing.B, file string, rowsPerPass int) {
	cfg := mustParse(b, file)
	b.Run("sqlite", func(b *testing.B) {
		q, clk := newTestQueue(b)
		runPasses(b, q, clk, cfg, rowsPerPass)
	})
	b.Run("postgres", func(b *testing.B) {
		clk := clock.NewFake(t0)
		runPasses(b, openQueue(b, pgtest.DSN(b), clk), clk, cfg, rowsPerPass)
	})
}

func runPasses(b *testing.B, q *queue.Client, clk *clock.Fake, cfg *config.Config, rowsPerPass int) {
	beat, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := beat.pass(ctx, clk.Now()); err != nil { // creates the cursors
		b.Fatal(err)
	}
	rows := 0
	for b.Loop() {
		clk.Advance(time.Minute)
		if _, err := beat.pass(ctx, clk.Now()); err != nil {
			b.Fatal(err)
		}
		rows += rowsPerPass
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkBeat10000Schedules: 10,000 schedules due at the same minute,
// committed by one AdvanceBatch (transactions of up to 5,000 rows).
func BenchmarkBeat10000Schedules(b *testing.B) {
	benchmarkPass(b, manySchedules(10000, func(i int) int { return i }), 10000)
}

// BenchmarkBeat10000SchedulesUnsorted is BenchmarkBeat10000Schedules with
// the schedules in the file in an order unrelated to their names, as in a
// file written by hand, so that the schedules of one transaction are not
// neighbours in the indexes that begin with the schedule's name.
func BenchmarkBeat10000SchedulesUnsorted(b *testing.B) {
	const n = 10000
	// 7919 is prime, so i -> 7919*i mod n visits every name once.
	benchmarkPass(b, manySchedules(n, func(i int) int { return 7919 * i % n }), n)
}

// BenchmarkBeat10000SchedulesWithHistory is BenchmarkBeat10000Schedules
// on a file that holds the done jobs of earlier ticks, as a daemon's does
// until retain_done purges them. A tick inserts one key per schedule into
// the two indexes that begin with the schedule's name (the dedup key and
// jobs_schedule_at), so it writes more of their pages the more of them
// there are, up to one page each per schedule. Between the timed passes
// a pool, stopped before the next one, runs the new jobs to done, and the
// WAL is checkpointed.
func BenchmarkBeat10000SchedulesWithHistory(b *testing.B) {
	const n = 10000
	cfg := mustParse(b, manySchedules(n, func(i int) int { return i }))
	for _, history := range []int{100000, 400000} {
		b.Run(fmt.Sprint("sqlite/history=", history), func(b *testing.B) {
			q, clk := newTestQueue(b)
			beat, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			jobs := 0
			tick := func() {
				clk.Advance(time.Minute)
				if _, err := beat.pass(ctx, clk.Now()); err != nil {
					b.Fatal(err)
				}
				jobs += n
			}
			if _, err := beat.pass(ctx, clk.Now()); err != nil { // creates the cursors
				b.Fatal(err)
			}
			for jobs < history {
				tick()
			}
			runToDone(b, q, clk, jobs, jobs)
			for b.Loop() {
				tick()
				b.StopTimer()
				runToDone(b, q, clk, n, jobs)
				b.StartTimer()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// runToDone runs a pool on q until it has run pending jobs and the file
// shows done of them all, stops it, and checkpoints the WAL.
func runToDone(b *testing.B, q *queue.Client, clk *clock.Fake, pending, done int) {
	p, err := queue.NewPool(q, queue.PoolConfig{Workers: 8, Clock: clk, MaintenanceEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	var ran atomic.Int64
	allRan := make(chan struct{})
	p.Register("t", queue.HandlerFunc(func(context.Context, *queue.Job) error {
		if ran.Add(1) == int64(pending) {
			close(allRan)
		}
		return nil
	}), queue.TypeConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(ctx) }()
	select {
	case <-allRan:
	case err := <-stopped:
		b.Fatalf("pool stopped: %v", err)
	}
	for {
		s, err := q.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if s.Total[queue.StateDone] == done {
			break
		}
		select {
		case err := <-stopped:
			b.Fatalf("pool stopped: %v", err)
		case <-time.After(10 * time.Millisecond): // polling the result, not synchronising
		}
	}
	cancel()
	if err := <-stopped; err != nil && !errors.Is(err, context.Canceled) {
		b.Fatal(err)
	}
	// A daemon's pool checkpoints the WAL in the background as it goes,
	// so the next tick starts on a short WAL, not behind the WAL of all
	// the completions.
	c, ok := q.Engine().(interface{ CheckpointPassive(context.Context) error })
	if !ok {
		b.Fatalf("%T has no background checkpoint", q.Engine())
	}
	if err := c.CheckpointPassive(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBeatStart10000Schedules: the first pass over 10,000 new
// schedules, which creates their cursors; reports cursors created per
// second.
func BenchmarkBeatStart10000Schedules(b *testing.B) {
	const n = 10000
	cfg := mustParse(b, manySchedules(n, func(i int) int { return i }))
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		q, clk := newTestQueue(b)
		beat, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := beat.pass(ctx, clk.Now()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "cursors/s")
}

// manySchedules returns a file of n schedules due every minute, the i-th
// in the file named after name(i).
func manySchedules(n int, name func(i int) int) string {
	var sb strings.Builder
	sb.WriteString("[tasks.t]\n")
	for i := range n {
		fmt.Fprintf(&sb, "[[schedule]]\nname = \"s%05d\"\ncron = \"* * * * *\"\ntask = \"t\"\n", name(i))
	}
	return sb.String()
}

// BenchmarkBeatFanOut100000: one schedule fanned out to 100,000 items, one
// Advance per minute.
func BenchmarkBeatFanOut100000(b *testing.B) {
	const n = 100000
	var sb strings.Builder
	sb.WriteString("[tasks.t]\n[[schedule]]\nname = \"s\"\ncron = \"* * * * *\"\ntask = \"t\"\npayload = { format = \"pdf\" }\nfor_each = [\n")
	for i := range n {
		fmt.Fprintf(&sb, "{ customer = \"c%06d\" },\n", i)
	}
	sb.WriteString("]\n")
	benchmarkPass(b, sb.String(), n)
}

// BenchmarkBeatHeap10000Schedules: the live heap a beat holds for 10,000
// realistic schedules (see bigconfig) after its first pass, which creates
// their cursors, beyond the config's own; reports it per schedule.
func BenchmarkBeatHeap10000Schedules(b *testing.B) {
	const n = 10000
	cfg := mustParse(b, bigconfig.String(n))
	ctx := context.Background()
	var held int64
	for b.Loop() {
		b.StopTimer()
		q, clk := newTestQueue(b)
		before := liveHeap()
		b.StartTimer()
		beat, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := beat.pass(ctx, clk.Now()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		held = liveHeap() - before
		runtime.KeepAlive(beat)
		q.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(held)/n, "bytes/schedule")
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
