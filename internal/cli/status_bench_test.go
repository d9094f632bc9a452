package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/sqlite/sqlitetest"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// BenchmarkStatusMillion measures -status -json, in process, on a queue of
// 1,000,000 done jobs and 1,000 ready ones, with ten schedules: on a SQLite
// file and, when SCHEDULER_TEST_POSTGRES is set, on a PostgreSQL schema.
func BenchmarkStatusMillion(b *testing.B) {
	ctx := context.Background()
	var conf strings.Builder
	conf.WriteString("[tasks.type0]\ncommand = [\"true\"]\n")
	for i := range 10 {
		fmt.Fprintf(&conf, "[[schedule]]\nname = \"schedule%d\"\ncron = \"0 0 1 1 *\"\ntask = \"type0\"\n", i)
	}
	cfg, err := config.Parse("schedules.toml", []byte(conf.String()))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(-2 * time.Hour)
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "q.db")
		q, err := engine.Open(ctx, path, engine.Config{})
		if err != nil {
			b.Fatal(err)
		}
		q.Close()
		if err := sqlitetest.FillMillion(ctx, path, 1_000_000, 1000, start); err != nil {
			b.Fatal(err)
		}
		benchStatus(b, cfg, path)
	})
	b.Run("postgres", func(b *testing.B) {
		dsn := pgtest.DSN(b)
		q, err := engine.Open(ctx, dsn, engine.Config{})
		if err != nil {
			b.Fatal(err)
		}
		q.Close()
		if err := pgtest.FillMillion(ctx, dsn, 1_000_000, 1000, start); err != nil {
			b.Fatal(err)
		}
		benchStatus(b, cfg, dsn)
	})
}

// benchStatus measures -status -json of the queue at db.
func benchStatus(b *testing.B, cfg *config.Config, db string) {
	ctx := context.Background()
	o := &options{json: true, wait: time.Minute}
	a := &app{o: o, cfg: cfg, db: db, dbPath: db, stdout: io.Discard, stderr: io.Discard,
		log: slog.New(slog.DiscardHandler), clock: clock.Real{}}
	for b.Loop() {
		if err := a.showStatus(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
