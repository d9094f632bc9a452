//go:build unix

package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/sqlite/sqlitetest"
)

// BenchmarkTickCeiling is the ceiling of the beat's tick of 10,000
// schedules on this schema: the same rows as the beat's jobs, inserted by
// insertBatchSQL through the driver in transactions of 5,000 rows (as
// store.AdvanceBatchRows) without the writer's autocheckpoint, as
// Store.AdvanceBatch commits them, with no beat, no cursors and no
// counts. It runs on a fresh file and on one holding a week of history of
// those schedules (sqlitetest.FillTicks: 168 hourly ticks, 1,680,000 done
// jobs), with the writer's default page cache and with one of 256 MB,
// which holds the pages a tick writes. Between the timed ticks one UPDATE
// marks the new jobs done and the WAL is checkpointed. It reports rows/s
// and the process's CPU per row.
func BenchmarkTickCeiling(b *testing.B) {
	const schedules, ticks = 10000, 7 * 24
	names := make([]string, schedules)
	for i := range names {
		names[i] = fmt.Sprintf("s%05d", i)
	}
	for _, history := range []bool{false, true} {
		name := "fresh"
		if history {
			name = "week"
		}
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "q.db")
			s, err := Open(context.Background(), path, Config{})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
			if history {
				first := t0.Add(-(ticks - 1) * time.Hour)
				if err := sqlitetest.FillTicks(context.Background(), path, names, "t", first, time.Hour, ticks); err != nil {
					b.Fatal(err)
				}
			}
			at := t0
			for _, cache := range []int{0, 256 << 20} {
				b.Run(fmt.Sprintf("cache=%dMB", cache>>20), func(b *testing.B) {
					at = tickCeiling(b, path, cache, names, at)
				})
			}
		})
	}
}

// tickCeiling times ticks of names after at on the queue file at path, with
// a writer page cache of cache bytes (0: SQLite's default), and returns the
// last tick's instant.
func tickCeiling(b *testing.B, path string, cache int, names []string, at time.Time) time.Time {
	ctx := context.Background()
	// As Store.AdvanceBatch commits a batch of many jobs: the WAL is
	// checkpointed between the timed ticks, not by their commits.
	dsn := dsn(path, 5*time.Second, false) + "&_pragma=wal_autocheckpoint(0)"
	if cache > 0 {
		dsn += fmt.Sprintf("&_pragma=cache_size(-%d)", cache>>10)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	insert, err := conn.PrepareContext(ctx, insertBatchSQL)
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	rows := 0
	args := make([]any, 0, 13*batchRows)
	for b.Loop() {
		at = at.Add(time.Hour)
		key, ms := "||"+at.UTC().Format(time.RFC3339), at.UnixMilli()
		c0 := cpuUsed()
		for tx := 0; tx < len(names); tx += 5000 {
			if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
				b.Fatal(err)
			}
			for i := tx; i < min(tx+5000, len(names)); i += batchRows {
				args = args[:0]
				for _, s := range names[i : i+batchRows] {
					args = append(args, s+key, "t", "{}", 5, 0, ms, s, "", ms, ms, 1, nil, nil)
				}
				if _, err := insert.ExecContext(ctx, args...); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				b.Fatal(err)
			}
		}
		cpu += cpuUsed() - c0
		rows += len(names)
		b.StopTimer()
		// As a pool leaves them (see finishDoneSQL), then a checkpoint.
		for _, q := range []string{
			`UPDATE jobs SET state = 'done', attempt = 1, owner = 'bench/w0', started_at = run_at, finished_at = run_at + 50 WHERE state = 'pending'`,
			"PRAGMA wal_checkpoint(PASSIVE)",
		} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(rows), "cpu-us/row")
	return at
}

// cpuUsed is the CPU time the process has used, user and system.
func cpuUsed() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
