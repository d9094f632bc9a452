package schedule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/sqlite/sqlitetest"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/schedule/internal/bigconfig"
)

// benchmarkPass measures one beat pass per minute of fake time, each
// materialising rowsPerPass jobs, on a SQLite file and, when
// SCHEDULER_TEST_POSTGRES is set, on a PostgreSQL schema of its own, and
// reports jobs written per second and, per job, the process's CPU and the
// kilobytes it read and wrote through system calls during the passes (on
// SQLite the file and its WAL, on PostgreSQL the connection).
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
	var cpu time.Duration
	var read, written int64
	for b.Loop() {
		clk.Advance(time.Minute)
		c0 := cpuNow()
		r0, w0 := ioNow()
		if _, err := beat.pass(ctx, clk.Now()); err != nil {
			b.Fatal(err)
		}
		r1, w1 := ioNow()
		cpu += cpuNow() - c0
		read, written = read+r1-r0, written+w1-w0
		rows += rowsPerPass
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(rows), "cpu-us/row")
	b.ReportMetric(float64(read)/1024/float64(rows), "read-KB/row")
	b.ReportMetric(float64(written)/1024/float64(rows), "written-KB/row")
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
// until retain_done purges them: 100,000 and 400,000 of schedules due
// every minute, made by the beat and run by a pool, and a week of
// 10,000 hourly schedules (168 ticks, 1,680,000 jobs, written in the
// shape the beat and a pool leave by sqlitetest.FillTicks). A tick
// inserts one key per schedule into the two indexes that begin with the
// schedule's name (the dedup key and jobs_schedule_at), so it writes more
// of their pages the more of them there are, up to one page each per
// schedule. Between the timed passes a pool, stopped before the next one,
// runs the new jobs to done, and the WAL is checkpointed. Besides rows/s
// it reports what timeTicks says.
func BenchmarkBeat10000SchedulesWithHistory(b *testing.B) {
	const n = 10000
	for _, history := range []int{100000, 400000} {
		b.Run(fmt.Sprint("sqlite/history=", history), func(b *testing.B) {
			cfg := mustParse(b, manySchedules(n, func(i int) int { return i }))
			q, clk := newTestQueue(b)
			beat := benchBeat(b, q, clk, cfg)
			for jobs := 0; jobs < history; jobs += n {
				clk.Advance(time.Minute)
				if _, err := beat.pass(context.Background(), clk.Now()); err != nil {
					b.Fatal(err)
				}
			}
			runToDone(b, q, clk, history, history)
			timeTicks(b, q, clk, beat, time.Minute, n, history)
		})
	}
	b.Run("sqlite/week", func(b *testing.B) {
		const ticks = 7 * 24
		text := strings.ReplaceAll(manySchedules(n, func(i int) int { return i }), "* * * * *", "0 * * * *")
		cfg := mustParse(b, text)
		path := filepath.Join(b.TempDir(), "q.db")
		migrated, err := engine.Open(context.Background(), path, engine.Config{})
		if err != nil {
			b.Fatal(err)
		}
		migrated.Close()
		names := make([]string, 0, n)
		for _, s := range cfg.Schedules {
			names = append(names, s.Name)
		}
		if err := sqlitetest.FillTicks(context.Background(), path, names, "t", t0.Add(-(ticks-1)*time.Hour), time.Hour, ticks); err != nil {
			b.Fatal(err)
		}
		clk := clock.NewFake(t0)
		q := openQueue(b, path, clk)
		timeTicks(b, q, clk, benchBeat(b, q, clk, cfg), time.Hour, n, ticks*n)
	})
}

// benchBeat returns a beat of cfg on q after its first pass, which creates
// the cursors.
func benchBeat(b *testing.B, q *queue.Client, clk *clock.Fake, cfg *config.Config) *Beat {
	beat, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := beat.pass(context.Background(), clk.Now()); err != nil {
		b.Fatal(err)
	}
	return beat
}

// timeTicks times passes of beat every every, each materialising n jobs,
// on q holding done jobs, and runs them to done between passes. It
// reports rows/s, and per row the process's CPU and the kilobytes it read
// and wrote through system calls during the passes (the pages SQLite
// reads from the file and the WAL, and writes to them).
func timeTicks(b *testing.B, q *queue.Client, clk *clock.Fake, beat *Beat, every time.Duration, n, done int) {
	ctx := context.Background()
	var cpu time.Duration
	var read, written int64
	for b.Loop() {
		clk.Advance(every)
		c0 := cpuNow()
		r0, w0 := ioNow()
		if _, err := beat.pass(ctx, clk.Now()); err != nil {
			b.Fatal(err)
		}
		r1, w1 := ioNow()
		cpu += cpuNow() - c0
		read, written = read+r1-r0, written+w1-w0
		b.StopTimer()
		done += n
		runToDone(b, q, clk, n, done)
		b.StartTimer()
	}
	rows := float64(n * b.N)
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/rows, "cpu-us/row")
	b.ReportMetric(float64(read)/1024/rows, "read-KB/row")
	b.ReportMetric(float64(written)/1024/rows, "written-KB/row")
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
