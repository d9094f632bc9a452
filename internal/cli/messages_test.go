package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// runInProcess runs the command in-process on a config written to a fresh
// directory and returns its stdout, stderr and exit code.
func runInProcess(t *testing.T, config string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schedules.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	err := Run(context.Background(), append([]string{"-config", path}, args...), &out, &errb, nil, Options{})
	return out.String(), errb.String(), ExitCode(err)
}

// TestCheckSummary: -check counts in words that agree with the numbers,
// and a rejected file ends with the count of its problems, not with a claim
// that something was or was not applied.
func TestCheckSummary(t *testing.T) {
	t.Parallel()
	one := "[tasks.t]\ncommand = [\"true\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n"
	out, errs, code := runInProcess(t, one, "-check")
	if code != 0 {
		t.Fatalf("-check: exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, ": ok, 1 schedule, 1 task, database ") {
		t.Errorf("-check of one schedule and one task says:\n%s", out)
	}
	two := one + "[tasks.u]\ncommand = [\"true\"]\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"u\"\n"
	if out, _, _ := runInProcess(t, two, "-check"); !strings.Contains(out, ": ok, 2 schedules, 2 tasks, database ") {
		t.Errorf("-check of two schedules and two tasks says:\n%s", out)
	}

	bad := strings.Replace(one, "@daily", "61 * * * *", 1)
	tests := []struct {
		name   string
		config string
		args   []string
		last   string
	}{
		{"check, one problem", bad, []string{"-check"}, "1 problem in "},
		{"check, two problems", bad + "bogus = 1\n", []string{"-check"}, "2 problems in "},
		{"next", bad, []string{"-next", "a"}, "1 problem in "},
	}
	for _, tt := range tests {
		_, errs, code := runInProcess(t, tt.config, tt.args...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2", tt.name, code)
		}
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, tt.last) || !strings.Contains(last, "schedules.toml") {
			t.Errorf("%s: last line %q, want %q and the file", tt.name, last, tt.last)
		}
		if tt.args[0] == "-check" && (strings.Contains(last, "applied") || strings.Contains(last, "nothing")) {
			t.Errorf("%s: -check applies nothing ever, yet says %q", tt.name, last)
		}
		if tt.args[0] != "-check" && !strings.HasSuffix(last, "; nothing was done") {
			t.Errorf("%s: last line %q does not say that nothing was done", tt.name, last)
		}
	}
}

// TestProblemCount: the note that ends a list cut short is not counted as
// a problem.
func TestProblemCount(t *testing.T) {
	t.Parallel()
	var es config.Errors
	for range config.MaxErrors {
		es = append(es, &config.Error{File: "s.toml", Err: errors.New("bad")})
	}
	if got, want := problemCount(es[:1]), "1 problem in s.toml"; got != want {
		t.Errorf("problemCount(1) = %q, want %q", got, want)
	}
	es = append(es, &config.Error{File: "s.toml", Err: fmt.Errorf("%w: stopped", config.ErrTooManyProblems)})
	if got, want := problemCount(es), "more than 100 problems in s.toml"; got != want {
		t.Errorf("problemCount(cut short) = %q, want %q", got, want)
	}
}

// TestStatusJSONSaysNullForNone: a value that does not exist is null, so
// that "no job waits" is not "a job waits for 0 ms", and a paused or never
// run schedule has no next or last run rather than an empty one.
func TestStatusJSONSaysNullForNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	q, err := engine.Open(t.Context(), db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetPaused(t.Context(), "b", true); err != nil {
		t.Fatal(err)
	}
	q.Close()
	config := "[tasks.t]\ncommand = [\"true\"]\n" +
		"[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n" +
		"[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"t\"\n"
	status := func() map[string]any {
		t.Helper()
		out, errs, code := runInProcess(t, config, "-db", db, "-status", "-json")
		if code != 0 {
			t.Fatalf("-status -json: exit %d\n%s", code, errs)
		}
		var rep map[string]any
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("-status -json printed %q: %v", out, err)
		}
		return rep
	}
	rep := status()
	if v, ok := rep["oldest_ready_ms"]; !ok || v != nil {
		t.Errorf("oldest_ready_ms with no job = %v (present %v), want null", v, ok)
	}
	want := map[string]map[string]bool{ // schedule -> key -> null
		"a": {"last_run": true, "last_state": true, "last_job_id": true, "next_run": false, "cron": false},
		"b": {"last_run": true, "next_run": true},
	}
	for _, s := range rep["schedules"].([]any) {
		s := s.(map[string]any)
		for key, null := range want[s["name"].(string)] {
			if v, ok := s[key]; !ok || (v == nil) != null {
				t.Errorf("schedule %s: %s = %v (present %v), want null %v", s["name"], key, v, ok, null)
			}
		}
	}

	q, err = engine.Open(t.Context(), db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(t.Context(), queue.NewJob{Type: "t", RunAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	q.Close()
	if v, ok := status()["oldest_ready_ms"].(float64); !ok || v < 60000 {
		t.Errorf("oldest_ready_ms with a job waiting a minute = %v, want at least 60000", v)
	}
}

// TestLogDurationsAreText: both log formats write a duration as "30s", at
// the top level and inside groups, never as nanoseconds.
func TestLogDurationsAreText(t *testing.T) {
	t.Parallel()
	for format, want := range map[string][]string{
		"json": {`"grace":"30s"`, `"duration":"1.5ms"`, `"retry_in":"2m0s"`},
		"text": {`grace=30s`, `duration=1.5ms`, `g.retry_in=2m0s`},
	} {
		var b strings.Builder
		log, err := newLogger(&options{logFormat: format, logLevel: "info"}, &b)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("scheduler stopping", "grace", 30*time.Second, slog.Duration("duration", 1500*time.Microsecond),
			slog.Group("g", "retry_in", 2*time.Minute))
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s log %q lacks %s", format, b.String(), w)
			}
		}
	}
}

// lineWriter collects log lines and hands each to lines.
type lineWriter struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.lines <- string(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

// TestReloadLogsWhatChanged: the reload's log line names the schedules and
// tasks it added, changed (with their changed keys) and removed, and the
// [scheduler] keys it applied; the keys that wait for a restart are warned
// about.
func TestReloadLogsWhatChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := filepath.Join(dir, "schedules.toml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(config, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`
[scheduler]
workers = 2
[tasks.report]
command = ["true", "{{.customer}}"]
[tasks.old]
command = ["true"]
[[schedule]]
name = "nightly"
cron = "0 3 * * *"
task = "report"
for_each = [ { customer = "acme" } ]
[[schedule]]
name = "gone"
cron = "0 4 * * *"
task = "old"
`)
	logs := &lineWriter{lines: make(chan string, 1000)}
	signals := make(chan os.Signal, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), []string{"-config", config, "-db", filepath.Join(dir, "s.db"), "-log-format", "json"},
			io.Discard, logs, signals, Options{})
	}()
	waitLine := func(msg string) map[string]any {
		t.Helper()
		timeout := time.After(2 * time.Minute) // failure deadline, not a sync point
		for {
			select {
			case l := <-logs.lines:
				var e map[string]any
				if err := json.Unmarshal([]byte(l), &e); err != nil {
					t.Fatalf("log line %q: %v", l, err)
				}
				if e["msg"] == msg {
					return e
				}
			case err := <-done:
				t.Fatalf("daemon returned %v before logging %q", err, msg)
			case <-timeout:
				t.Fatalf("timed out waiting for %q", msg)
			}
		}
	}
	waitLine("scheduler started")
	write(`
[scheduler]
workers = 4
misfire_grace = "5m"
[tasks.report]
command = ["true", "--customer", "{{.customer}}"]
timeout = "1m"
[tasks.new]
command = ["true"]
[[schedule]]
name = "nightly"
cron = "0 2 * * *"
task = "report"
for_each = [ { customer = "acme" }, { customer = "globex" } ]
[[schedule]]
name = "fresh"
cron = "0 5 * * *"
task = "new"
`)
	signals <- syscall.SIGHUP
	warn := waitLine("reload: [scheduler] settings take effect at the next restart")
	got := waitLine("config reloaded")
	signals <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Errorf("daemon: %v", err)
	}
	if k := fmt.Sprint(warn["keys"]); k != "[workers]" {
		t.Errorf("restart warning keys = %s, want [workers]", k)
	}
	want := map[string]string{
		"schedules_added":   "[fresh]",
		"schedules_changed": "map[nightly:[cron for_each]]",
		"schedules_removed": "[gone]",
		"tasks_added":       "[new]",
		"tasks_changed":     "map[report:[command timeout]]",
		"tasks_removed":     "[old]",
		"scheduler_changed": "[misfire_grace]",
	}
	for k, w := range want {
		if v := fmt.Sprint(got[k]); v != w {
			t.Errorf("config reloaded: %s = %s, want %s", k, v, w)
		}
	}
}

// TestTaskWithoutHandlerNamesItsLine: a task with neither command nor url,
// and no Go handler registered under its name, is reported at the line of
// its [tasks.NAME] table, naming it once; problems found after loading are
// listed in line order.
func TestTaskWithoutHandlerNamesItsLine(t *testing.T) {
	t.Parallel()
	config := `[tasks.t]
command = ["true"]

[tasks.zeta]
max_attempts = 1

[tasks.alpha]
timeout = "1m"

[[schedule]]
name = "s"
cron = "@daily"
task = "t"
`
	_, errs, code := runInProcess(t, config, "-check")
	lines := strings.Split(strings.TrimSpace(errs), "\n")
	if code != ExitUsage || len(lines) != 3 ||
		!strings.HasSuffix(lines[0], `schedules.toml:4: task "zeta": neither command nor url given and no go handler registered`) ||
		!strings.HasSuffix(lines[1], `schedules.toml:7: task "alpha": neither command nor url given and no go handler registered`) ||
		!strings.HasPrefix(lines[2], "2 problems in ") {
		t.Errorf("-check of tasks without a handler: exit %d, stderr:\n%s\nwant each at its table's line, then the count", code, errs)
	}
}
