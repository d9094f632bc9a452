package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/sqlite/sqlitetest"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// historyJobs is the size of BenchmarkPagesHistory's queue.
const historyJobs = 1_000_000

// BenchmarkPagesHistory measures every page, rendered in process, on a
// queue of 1,000,000 jobs of 30 days' history (sqlitetest.FillHistory: 200
// schedules, ten of them hourly fan-outs of 100 items, one-off jobs, a mix
// of states, a dead alarm per dead run) under their configuration: on a
// SQLite file and, when SCHEDULER_TEST_POSTGRES is set, on a PostgreSQL
// schema. Each page is served once before it is timed. The aim is under
// 200 ms a page. Run it with
//
//	go test -run '^$' -bench BenchmarkPagesHistory -benchtime 20x ./internal/dashboard/
func BenchmarkPagesHistory(b *testing.B) {
	eachHistoryEngine(b, historyJobs, func(b *testing.B, h http.Handler) {
		for _, p := range historyPages {
			b.Run(p.name, func(b *testing.B) {
				// Once untimed, as the page is after its first view: the
				// charts keep the hours they group (store.Base.chartHours).
				serve(b, h, p.path)
				for b.Loop() {
					serve(b, h, p.path)
				}
			})
		}
	})
}

// TestPagesHistory renders every page of BenchmarkPagesHistory once, on a
// small history, so that the benchmark and its fixture keep working.
func TestPagesHistory(t *testing.T) {
	eachHistoryEngine(t, 5000, func(t *testing.T, h http.Handler) {
		for _, p := range historyPages {
			if body := serve(t, h, p.path); !strings.Contains(body, "</main>") {
				t.Errorf("GET %s: no whole page", p.path)
			}
		}
	})
}

// historyPages are the pages the benchmark measures: every page, the
// lists with and without filters.
var historyPages = []struct{ name, path string }{
	{"schedules", "/"},
	{"schedules-after", "/?after=sched100"},
	{"schedules-q", "/?q=fan"},
	{"schedules-alarm", "/?alarm=open"},
	{"schedule", "/schedules/sched000"},
	{"schedule-fanout", "/schedules/fan0"},
	{"schedule-item", "/schedules/fan0?item=n%3D5"},
	{"run-dead", "/runs/54"},
	{"run-done", "/runs/2"},
	{"run-instant", "/run?schedule=fan0&item=n%3D0&instant=2026-02-08T12:00:00Z"},
	{"jobs", "/jobs"},
	{"jobs-older", "/jobs?before=500000"},
	{"jobs-dead", "/jobs?state=dead"},
	{"jobs-pending-task", "/jobs?state=pending&task=mail"},
	{"jobs-schedule", "/jobs?schedule=fan3"},
	{"jobs-key", "/jobs?key=hist%7C99"},
	{"alarms", "/alarms"},
	{"charts", "/charts"},
	{"charts-week", "/charts?range=week"},
}

// serve answers GET path from h, which must answer 200 (or 303: an
// instant's run redirects to its job), and returns the page.
func serve(tb testing.TB, h http.Handler, path string) string {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	switch w.Code {
	case http.StatusOK:
		return w.Body.String()
	case http.StatusSeeOther:
		return serve(tb, h, w.Header().Get("Location"))
	}
	tb.Fatalf("GET %s = %d: %s", path, w.Code, w.Body)
	return ""
}

// historyConfig configures FillHistory's schedules: sched000 to sched189
// hourly at their minute, fan0 to fan9 hourly over items n=0 to n=99.
func historyConfig(tb testing.TB) *config.Config {
	tb.Helper()
	var conf strings.Builder
	conf.WriteString("[tasks.type0]\ncommand = [\"true\"]\n[tasks.fanwork]\ncommand = [\"true\"]\n")
	for i := range 190 {
		fmt.Fprintf(&conf, "[[schedule]]\nname = \"sched%03d\"\ncron = \"%d * * * *\"\ntask = \"type0\"\ndeadline = \"10m\"\n", i, i%60)
	}
	var items []string
	for i := range 100 {
		items = append(items, fmt.Sprintf("{ n = \"%d\" }", i))
	}
	for i := range 10 {
		fmt.Fprintf(&conf, "[[schedule]]\nname = \"fan%d\"\ncron = \"0 * * * *\"\ntask = \"fanwork\"\nfor_each = [%s]\n", i, strings.Join(items, ", "))
	}
	cfg, err := config.Parse("schedules.toml", []byte(conf.String()))
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// eachHistoryEngine fills a queue with n jobs of history on each engine
// and calls fn with the dashboard over it.
func eachHistoryEngine[T interface {
	testing.TB
	Run(string, func(T)) bool
}](tb T, n int, fn func(T, http.Handler)) {
	ctx := context.Background()
	cfg := historyConfig(tb)
	tb.Run("sqlite", func(tb T) {
		path := filepath.Join(tb.TempDir(), "q.db")
		q, err := engine.Open(ctx, path, engine.Config{})
		if err != nil {
			tb.Fatal(err)
		}
		q.Close()
		if err := sqlitetest.FillHistory(ctx, path, n, now); err != nil {
			tb.Fatal(err)
		}
		fn(tb, historyHandler(tb, cfg, path))
	})
	tb.Run("postgres", func(tb T) {
		dsn := pgtest.DSN(tb)
		q, err := engine.Open(ctx, dsn, engine.Config{})
		if err != nil {
			tb.Fatal(err)
		}
		q.Close()
		if err := pgtest.FillHistory(ctx, dsn, n, now); err != nil {
			tb.Fatal(err)
		}
		fn(tb, historyHandler(tb, cfg, dsn))
	})
}

// historyHandler opens the queue at db at now, gives every schedule a
// cursor at now as the beat would, and returns the dashboard over it.
func historyHandler(tb testing.TB, cfg *config.Config, db string) http.Handler {
	clk := clock.NewFake(now)
	ctx := context.Background()
	q, err := engine.Open(ctx, db, engine.Config{Clock: clk})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { q.Close() })
	var advs []store.Advance
	for _, sc := range cfg.Schedules {
		advs = append(advs, store.Advance{Schedule: sc.Name, To: now})
	}
	if _, err := q.AdvanceBatch(ctx, advs); err != nil {
		tb.Fatal(err)
	}
	h, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, Clock: clk})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}
