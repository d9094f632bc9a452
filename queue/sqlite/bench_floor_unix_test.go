//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// BenchmarkDrainFloor is the floor of queue.BenchmarkDrainCPU on this
// engine, in process CPU per job: the jobs claimed and completed in
// transactions of floorBatch, with no pool around them. "statements" runs
// the claim and the completion statements alone on the writer, reading of
// each claimed row only its id and attempt; "store" runs CommitPoolTx as the
// pool calls it, recording the last transaction's jobs done and claiming as
// many, every claimed row read into a job.
func BenchmarkDrainFloor(b *testing.B) {
	for _, c := range []struct {
		name  string
		drain func(ctx context.Context, b *testing.B, s *Store, now time.Time)
	}{{"statements", drainStatements}, {"store", drainStore}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			var cpu time.Duration
			total := 0
			for b.Loop() {
				b.StopTimer()
				s := floorStore(ctx, b)
				now := s.Clock().Now().Add(time.Second)
				b.StartTimer()
				c0 := processCPU()
				c.drain(ctx, b, s, now)
				cpu += processCPU() - c0
				total += floorJobs
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(total), "cpu-us/job")
		})
	}
}

const (
	floorJobs  = 150 * floorBatch
	floorBatch = 128
)

// floorStore opens a file holding floorJobs ready jobs of type t.
func floorStore(ctx context.Context, b *testing.B) *Store {
	s, err := Open(ctx, filepath.Join(b.TempDir(), "q.db"), Config{})
	if err != nil {
		b.Fatal(err)
	}
	jobs := make([]store.NewJob, floorJobs)
	for i := range jobs {
		jobs[i] = store.NewJob{Type: "t", Key: fmt.Sprint(i)}
	}
	for len(jobs) > 0 {
		n := min(len(jobs), 1000)
		if _, err := s.EnqueueBatch(ctx, jobs[:n]); err != nil {
			b.Fatal(err)
		}
		jobs = jobs[n:]
	}
	return s
}

// drainStatements claims and completes every job with the two statements,
// floorBatch a transaction, on the writer's one connection.
func drainStatements(ctx context.Context, b *testing.B, s *Store, now time.Time) {
	// Prepared on the writer as the statement cache prepares them.
	claim, err := s.w.PrepareContext(ctx, claimQuery(claimSQL, floorBatch))
	if err != nil {
		b.Fatal(err)
	}
	defer claim.Close()
	done, err := s.w.PrepareContext(ctx, finishDoneSQL(floorBatch))
	if err != nil {
		b.Fatal(err)
	}
	defer done.Close()
	types := s.types.json([]string{"t"})
	args := make([]any, 4*floorBatch+1)
	for n := 0; n < floorJobs; {
		tx, err := s.w.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		rows, err := tx.StmtContext(ctx, claim).QueryContext(ctx, "p", ms(now.Add(time.Minute)), ms(now), types)
		if err != nil {
			b.Fatal(err)
		}
		k := 0
		for rows.Next() {
			var id, attempt int64
			var skip any
			if err := rows.Scan(&id, &skip, &skip, &skip, &attempt, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip, &skip); err != nil {
				tx.Rollback()
				b.Fatal(err)
			}
			args[4*k], args[4*k+1], args[4*k+2], args[4*k+3] = id, attempt, ms(now), "p/w0"
			k++
		}
		if err := rows.Err(); err != nil || k != floorBatch {
			tx.Rollback()
			b.Fatalf("claimed %d, %v", k, err)
		}
		args[4*floorBatch] = "p"
		r, err := tx.StmtContext(ctx, done).ExecContext(ctx, args...)
		if n, _ := affected(r, err); n != floorBatch {
			tx.Rollback()
			b.Fatalf("completed %d, %v", n, err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		n += k
	}
}

// drainStore claims and completes every job through CommitPoolTx.
func drainStore(ctx context.Context, b *testing.B, s *Store, now time.Time) {
	var results []store.Result
	for n := 0; n < floorJobs; {
		res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: now, Results: results,
			Claim: &store.Claim{Lease: time.Minute, N: floorBatch, Types: []string{"t"}}})
		if err != nil {
			b.Fatal(err)
		}
		n += len(results)
		results = results[:0]
		for _, j := range res.Claimed {
			results = append(results, store.Result{Job: j, Worker: "p/w0", Outcome: store.OutcomeDone, Started: now, Finished: now})
		}
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
