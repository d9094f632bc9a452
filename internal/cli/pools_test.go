package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/tasks"
)

// poolsConfig gives the exports a pool of 1 worker; the cleanup runs in
// the default pool, of 1 worker too. The exports schedule fans out to
// backlogExports items.
func poolsConfig(exportWorkers int) string {
	var items []string
	for i := range backlogExports {
		items = append(items, fmt.Sprintf("{ n = %d }", i))
	}
	return fmt.Sprintf(`
[scheduler]
workers = 1
shutdown_grace = "5m"
[tasks.export]
max_attempts = 1
[tasks.cleanup]
[pools.exports]
workers = %d
tasks = ["export"]
[[schedule]]
name = "exports"
cron = "0 0 1 1 *"
task = "export"
for_each = [%s]
[[schedule]]
name = "cleanup"
cron = "0 0 1 1 *"
task = "cleanup"
`, exportWorkers, strings.Join(items, ", "))
}

const backlogExports = 20

// TestDaemonRunsTheConfigsPools runs the daemon with a [pools.exports]
// table: with 20 exports triggered and the first one running, blocked, a
// cleanup triggered behind them starts while every export is still
// blocked. The export runs on the exports pool (its owner says so), -check
// lists the pools, -status counts the daemon once, and a reload that
// changes the pools says it waits for a restart. The metrics give each
// pool's workers and busy workers. On SQLite and PostgreSQL.
func TestDaemonRunsTheConfigsPools(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testDaemonPools(t, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testDaemonPools(t, []string{"-db", pgtest.DSN(t)})
	})
}

func testDaemonPools(t *testing.T, db []string) {
	dir := t.TempDir()
	config := filepath.Join(dir, "schedules.toml")
	writeFile(t, config, poolsConfig(1))
	started := make(chan string, backlogExports+1)
	release := make(chan struct{})
	export := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		started <- "export"
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	cleanup := queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error {
		started <- "cleanup"
		return nil
	})
	opts := Options{Tasks: func(r *tasks.Registry) error {
		if err := r.Register("export", export); err != nil {
			return err
		}
		return r.Register("cleanup", cleanup)
	}}
	args := append([]string{"-config", config}, db...)
	cmd := func(extra ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := Run(context.Background(), append(args, extra...), &out, &out, nil, opts); err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, out.String())
		}
		return out.String()
	}
	check := cmd("-check")
	for _, want := range []string{"POOL     WORKERS  TASKS", "default  1        cleanup", "exports  1        export"} {
		if !strings.Contains(check, want) {
			t.Errorf("-check output lacks %q:\n%s", want, check)
		}
	}

	var logs syncBuffer
	signals := make(chan os.Signal, 2)
	exited := make(chan error, 1)
	go func() {
		exited <- Run(context.Background(), append(args, "-http", "127.0.0.1:0"), &logs, &logs, signals, opts)
	}()
	closed := false
	defer func() {
		if !closed {
			close(release)
		}
		signals <- syscall.SIGTERM
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("Run = %v", err)
			}
		case <-time.After(deadline):
			t.Errorf("Run did not return after SIGTERM\n%s", logs.String())
		}
	}()
	eventually(t, "daemon started", func() bool { return strings.Contains(logs.String(), "scheduler started") })
	if log := logs.String(); !strings.Contains(log, `workers=2 pools="default=1 exports=1"`) {
		t.Errorf("start line does not give the pools:\n%s", log)
	}

	cmd("-trigger", "exports")
	if got := waitFor(t, started); got != "export" {
		t.Fatalf("first start = %s, want an export", got)
	}
	cmd("-trigger", "cleanup")
	if got := waitFor(t, started); got != "cleanup" {
		t.Fatalf("after the first export, %s started, want the cleanup", got)
	}
	// Once the cleanup is done its worker is free again (the gauges below).
	var st statusReport
	eventually(t, "cleanup done", func() bool {
		if err := json.Unmarshal([]byte(cmd("-status", "-json")), &st); err != nil {
			t.Fatal(err)
		}
		return st.Counts["done"]["cleanup"] == 1
	})
	if st.Counts["running"]["export"] != 1 || st.Counts["pending"]["export"] != backlogExports-1 {
		t.Errorf("when the cleanup started: %v, want 1 export running, %d pending", st.Counts, backlogExports-1)
	}
	m := listenRE.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", logs.String())
	}
	got := samples(t, scrape(t, "http://"+m[1]+"/metrics"))
	for series, want := range map[string]float64{
		`scheduler_workers{pool="default"}`: 1, `scheduler_workers_busy{pool="default"}`: 0,
		`scheduler_workers{pool="exports"}`: 1, `scheduler_workers_busy{pool="exports"}`: 1,
	} {
		if v, ok := got[series]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if st.RunningPools == nil || *st.RunningPools != 2 {
		t.Errorf("running_pools = %v, want 2", st.RunningPools)
	}
	if status := cmd("-status"); !strings.Contains(status, "1 alive: ") || !strings.Contains(status, ", 2 workers, 2 pools)") {
		t.Errorf("-status daemons line: want 1 daemon of 2 pools, 2 workers:\n%s", status)
	}
	var running []jobView
	if err := json.Unmarshal([]byte(cmd("-jobs", "-state", "running", "-json")), &running); err != nil {
		t.Fatal(err)
	}
	if len(running) != 1 || !strings.HasSuffix(running[0].Owner, "/exports") {
		t.Errorf("running jobs = %+v, want one export owned by the exports pool", running)
	}

	// A reload that resizes the pool keeps the running layout, and says so.
	writeFile(t, config, poolsConfig(2))
	signals <- syscall.SIGHUP
	eventually(t, "reload", func() bool { return strings.Contains(logs.String(), "config reloaded") })
	if log := logs.String(); !strings.Contains(log, `msg="reload: [pools] take effect at the next restart" pools=[exports] running="default=1 exports=1"`) {
		t.Errorf("no warning that the pools wait for a restart:\n%s", log)
	}
	close(release)
	closed = true
	for range backlogExports - 1 {
		if got := waitFor(t, started); got != "export" {
			t.Fatalf("started %s, want the exports left", got)
		}
	}
}

// waitFor returns the next value from ch, failing the test after the
// deadline, a failure bound and not a synchronisation point.
func waitFor[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(deadline):
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}
