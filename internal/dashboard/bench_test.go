package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/sqlite/sqlitetest"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// BenchmarkPages measures each page, rendered in process, on a queue of
// 1,000,000 done jobs (10,000 of them of the schedules schedule0 to
// schedule9) and 1,000 ready ones, plus the test's schedules and alarm,
// under a configuration of 10,002 schedules (schedule0 to schedule9999, a
// fan-out per customer, every hundredth of them paused): on a SQLite file
// and, when SCHEDULER_TEST_POSTGRES is set, on a PostgreSQL schema. The aim
// is under 200 ms a page.
func BenchmarkPages(b *testing.B) {
	ctx := context.Background()
	var conf strings.Builder
	conf.WriteString(testConfig)
	conf.WriteString("[tasks.type0]\ncommand = [\"true\"]\n")
	for i := range benchSchedules {
		fmt.Fprintf(&conf, "[[schedule]]\nname = \"schedule%d\"\ncron = \"*/5 * * * *\"\ntask = \"type0\"\ndeadline = \"1h\"\n", i)
	}
	cfg, err := config.Parse("schedules.toml", []byte(conf.String()))
	if err != nil {
		b.Fatal(err)
	}
	start := now.Add(-2 * time.Hour)
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
		benchPages(b, cfg, path)
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
		benchPages(b, cfg, dsn)
	})
}

// benchSchedules is how many schedules the benchmark's configuration adds
// to the test's.
const benchSchedules = 10_000

// benchPages measures every page of the dashboard over the queue at db.
func benchPages(b *testing.B, cfg *config.Config, db string) {
	clk := clock.NewFake(now)
	q, err := engine.Open(context.Background(), db, engine.Config{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	f := seed(b, q)
	// A cursor per schedule, as the beat keeps: the schedules page reads
	// them all.
	ctx := context.Background()
	cursors, err := q.Cursors(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var advs []store.Advance
	for _, sc := range cfg.Schedules {
		if _, ok := cursors[sc.Name]; !ok {
			advs = append(advs, store.Advance{Schedule: sc.Name, To: now})
		}
	}
	res, err := q.AdvanceBatch(ctx, advs)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	for i := 0; i < benchSchedules; i += 100 {
		if err := q.SetPaused(ctx, fmt.Sprintf("schedule%d", i), true); err != nil {
			b.Fatal(err)
		}
	}
	h, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []struct{ name, path string }{
		{"schedules", "/"},
		{"schedules-after", "/?after=schedule8000"},
		{"schedules-before", "/?before=schedule8000"},
		{"schedules-q", "/?q=99"},
		{"schedules-q-after", "/?q=99&after=schedule9950"},
		{"schedules-paused", "/?state=paused"},
		{"schedules-alarm", "/?alarm=open"},
		{"schedule", "/schedules/schedule0"},
		{"daemons", "/daemons"},
		{"schedule-items", "/schedules/fan"},
		{"run-dead", fmt.Sprintf("/runs/%d", f.dead)},
		{"run-pending", fmt.Sprintf("/runs/%d", f.pending)},
		{"run-bulk", "/runs/500000"},
		{"run-instant", "/run?schedule=nightly&instant=" + at3(8).Format(time.RFC3339)},
		{"jobs", "/jobs"},
		{"jobs-older", "/jobs?before=500000"},
		{"jobs-done", "/jobs?state=done"},
		{"jobs-dead", "/jobs?state=dead"},
		{"jobs-pending-task", "/jobs?state=pending&task=type1"},
		{"jobs-schedule", "/jobs?schedule=schedule3"},
		{"jobs-schedule-older", "/jobs?schedule=schedule3&before=500000"},
		{"jobs-task-none", "/jobs?task=nosuchtask"},
		{"jobs-key", "/jobs?key=bulk%7C99"},
		{"jobs-payload", "/jobs?payload=nosuchtext"},
		{"jobs-payload-schedule", "/jobs?schedule=schedule3&payload=nosuchtext"},
		{"jobs-discarded", "/jobs?state=discarded"},
		{"alarms", "/alarms"},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, p.path, nil))
				if w.Code != http.StatusOK {
					b.Fatalf("GET %s = %d: %s", p.path, w.Code, w.Body)
				}
			}
		})
	}
}
