package cli

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"scheduler/clock"
	"scheduler/queue"
	"scheduler/queue/postgres/pgtest"
	"scheduler/schedule"
)

// millionSQL fills a SQLite queue's jobs table in one statement: ?1 done
// jobs of four types, one in a hundred of ten schedules, then ?3 ready
// ones. The table's insert trigger counts them.
const millionSQL = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 + ?3)
INSERT INTO jobs (key, type, payload, state, attempt, max_attempts, priority, run_at, schedule, item, scheduled_at, created_at, started_at, finished_at)
SELECT 'bulk|' || i, 'type' || (i % 4), '{}', CASE WHEN i <= ?1 THEN 'done' ELSE 'pending' END, CASE WHEN i <= ?1 THEN 1 ELSE 0 END, 5, 0,
	?2 + i, CASE WHEN i % 100 = 0 THEN 'schedule' || (i / 100 % 10) END, '', CASE WHEN i % 100 = 0 THEN ?2 + i END,
	?2 + i, CASE WHEN i <= ?1 THEN ?2 + i END, CASE WHEN i <= ?1 THEN ?2 + i END
FROM n`

// BenchmarkScrapeMillion measures a scrape of /metrics (the registry's
// Gather, database reads included) and -status, in process, on a queue of
// 1,000,000 done jobs and 1,000 ready ones, with ten schedules: on a SQLite
// file and, when SCHEDULER_TEST_POSTGRES is set, on a PostgreSQL schema.
func BenchmarkScrapeMillion(b *testing.B) {
	ctx := context.Background()
	var conf strings.Builder
	conf.WriteString("[tasks.type0]\ncommand = [\"true\"]\n")
	for i := range 10 {
		fmt.Fprintf(&conf, "[[schedule]]\nname = \"schedule%d\"\ncron = \"0 0 1 1 *\"\ntask = \"type0\"\n", i)
	}
	cfg, err := schedule.Parse("schedules.toml", []byte(conf.String()))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(-2 * time.Hour)
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "q.db")
		q, err := queue.Open(ctx, path, queue.Config{})
		if err != nil {
			b.Fatal(err)
		}
		q.Close()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec(millionSQL, 1_000_000, start.UnixMilli(), 1000); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec("ANALYZE"); err != nil {
			b.Fatal(err)
		}
		db.Close()
		benchScrape(b, cfg, path)
	})
	b.Run("postgres", func(b *testing.B) {
		dsn := pgtest.DSN(b)
		q, err := queue.Open(ctx, dsn, queue.Config{})
		if err != nil {
			b.Fatal(err)
		}
		q.Close()
		if err := pgtest.FillMillion(ctx, dsn, 1_000_000, 1000, start); err != nil {
			b.Fatal(err)
		}
		benchScrape(b, cfg, dsn)
	})
}

// benchScrape measures a scrape and -status of the queue at db.
func benchScrape(b *testing.B, cfg *schedule.Config, db string) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	b.Run("scrape", func(b *testing.B) {
		q, err := queue.Open(ctx, db, queue.Config{})
		if err != nil {
			b.Fatal(err)
		}
		defer q.Close()
		m := newMetrics(q, cfg, "bench", 8, func() int { return 0 }, log)
		for b.Loop() {
			mfs, err := m.reg.Gather()
			if err != nil || len(mfs) == 0 {
				b.Fatalf("Gather = %d families, %v", len(mfs), err)
			}
		}
	})
	b.Run("status", func(b *testing.B) {
		o := &options{json: true, wait: time.Minute}
		a := &app{o: o, cfg: cfg, db: db, dbPath: db, stdout: io.Discard, stderr: io.Discard, log: log, clock: clock.Real{}}
		for b.Loop() {
			if err := a.showStatus(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
