package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// BenchmarkInsertCeiling is the physical ceiling of one job per transaction
// on this schema: a prepared single-row INSERT between a prepared BEGIN and
// COMMIT (synchronous=NORMAL), with nothing of the queue around it, into the
// jobs table with its two indexes that every new job enters (the claim order
// and the unique key), without one of them, and without both.
func BenchmarkInsertCeiling(b *testing.B) {
	for _, c := range []struct {
		name    string
		indexes []string
	}{
		{"jobs", []string{keyIndexSQL, readyIndexSQL}},
		{"without-key-index", []string{readyIndexSQL}},
		{"without-ready-index", []string{keyIndexSQL}},
		{"no-index", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			db, err := sql.Open("sqlite", dsn(filepath.Join(b.TempDir(), "c.db"), 5*time.Second, false))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			for _, s := range append([]string{ceilingTableSQL}, c.indexes...) {
				if _, err := db.Exec(s); err != nil {
					b.Fatal(err)
				}
			}
			conn, err := db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			var stmts [3]*sql.Stmt
			for i, s := range []string{"BEGIN", ceilingInsertSQL, "COMMIT"} {
				if stmts[i], err = conn.PrepareContext(ctx, s); err != nil {
					b.Fatal(err)
				}
			}
			n := 0
			for b.Loop() {
				now := time.Now().UnixMilli()
				var id int64
				stmts[0].Exec()
				err := stmts[1].QueryRow(fmt.Sprintf("job|%016d", n), "t", `{"seq":1}`, 5, 0, now, nil, "", nil, now).Scan(&id)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := stmts[2].Exec(); err != nil {
					b.Fatal(err)
				}
				n++
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// The jobs table of migrations/0001_init.sql with only the indexes a
// BenchmarkInsertCeiling case adds.
const (
	ceilingTableSQL = `CREATE TABLE jobs (
	id INTEGER PRIMARY KEY, key TEXT NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL DEFAULT '{}',
	state TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL, priority INTEGER NOT NULL DEFAULT 0,
	run_at INTEGER NOT NULL, schedule TEXT, item TEXT NOT NULL DEFAULT '', scheduled_at INTEGER, lease_until INTEGER,
	owner TEXT, last_error TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER) STRICT`
	// insertJobSQL without its ON CONFLICT clause, which needs the key index.
	ceilingInsertSQL = `INSERT INTO jobs (key, type, payload, state, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at)
VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?) RETURNING id`
	keyIndexSQL   = `CREATE UNIQUE INDEX jobs_key ON jobs (key)`
	readyIndexSQL = `CREATE INDEX jobs_ready ON jobs (priority DESC, run_at, id) WHERE state = 'pending'`
)

// BenchmarkTypesJSON is the cost, per transaction or wake of a pool, of the JSON
// array of its types: encoded each time, and through typesCache.
func BenchmarkTypesJSON(b *testing.B) {
	types := []string{"backup", "cleanup", "http-check", "nightly-report", "sync"}
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(types); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache", func(b *testing.B) {
		var c typesCache
		for b.Loop() {
			c.json(types)
		}
	})
}

// BenchmarkClaimPastHeldBacklog is what a backlog of ready jobs that a
// claim may not take (held back by a rate limit, or of a task no handler
// here runs) costs the claim of another task, which finds nothing: the
// walk of the claim order passes over each held job.
func BenchmarkClaimPastHeldBacklog(b *testing.B) {
	for _, held := range []int{0, 1000, 10000} {
		b.Run(fmt.Sprintf("held=%d", held), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "q.db"), Config{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			jobs := make([]store.NewJob, held)
			for i := range jobs {
				jobs[i] = store.NewJob{Type: "held", Key: fmt.Sprint("h", i)}
			}
			for len(jobs) > 0 {
				n := min(len(jobs), 1000)
				if _, err := s.EnqueueBatch(ctx, jobs[:n]); err != nil {
					b.Fatal(err)
				}
				jobs = jobs[n:]
			}
			now := s.Clock().Now().Add(time.Second)
			b.ResetTimer()
			for range b.N {
				res, err := s.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: now, Claim: &store.Claim{Lease: time.Minute, N: 8, Types: []string{"other"}}})
				if err != nil || len(res.Claimed) != 0 {
					b.Fatal(res, err)
				}
			}
		})
	}
}
