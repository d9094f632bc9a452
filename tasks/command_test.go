//go:build linux

package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// sh runs script with /bin/sh -c, the way a user's own command line might:
// the shell is the program under test, not something the handler adds.
func sh(script string, args ...string) []string {
	return append([]string{"/bin/sh", "-c", script, "sh"}, args...)
}

func newTestCommand(t *testing.T, cfg CommandConfig) *Command {
	t.Helper()
	c, err := NewCommand(cfg)
	if err != nil {
		t.Fatalf("NewCommand(%q): %v", cfg.Argv, err)
	}
	return c
}

func testJob(payload string) *queue.Job {
	return &queue.Job{ID: 7, Key: "key-7", Type: "test", Payload: json.RawMessage(payload), Attempt: 1, MaxAttempts: 3}
}

// runResult is what one run of a Command produced.
type runResult struct {
	out []byte
	err error
}

// startRun runs c on job in the background.
func startRun(ctx context.Context, c *Command, job *queue.Job) <-chan runResult {
	ch := make(chan runResult, 1)
	go func() {
		out, err := c.run(ctx, job)
		ch <- runResult{out, err}
	}()
	return ch
}

func runCommand(t *testing.T, c *Command, job *queue.Job) ([]byte, error) {
	t.Helper()
	r := waitFor(t, startRun(t.Context(), c, job))
	return r.out, r.err
}

// fifo makes a named pipe. Reading or writing it blocks until the other end
// is opened, which is how a test and a child wait for each other.
func fifo(t *testing.T, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Release a reader still blocked in open when the test failed.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return path
}

// pidFIFO returns a named pipe for a child to write its pid to, and the
// channel that pid arrives on.
func pidFIFO(t *testing.T) (string, <-chan int) {
	path := fifo(t, "pid")
	ch := make(chan int, 1)
	go func() {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			ch <- pid
		}
	}()
	return path, ch
}

// waitGone waits until process pid has exited. A process that has exited but
// was not reaped (its parent is gone and init has not got to it) counts as
// gone: it can neither run nor hold files.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(failAfter/time.Millisecond))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			t.Fatalf("poll pidfd of %d: %v", pid, err)
		case n == 0:
			t.Fatalf("process %d still alive after %s", pid, failAfter)
		}
		return
	}
}

// killOnFailure kills pid when the test fails, so that a broken handler does
// not leave it behind.
func killOnFailure(t *testing.T, pid int) {
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

func TestNewCommandErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  CommandConfig
		want string // in the error text
	}{
		{"no argv", CommandConfig{}, "command is empty"},
		{"empty program", CommandConfig{Argv: []string{""}}, "program name is empty"},
		{"bad template", CommandConfig{Argv: []string{"echo", "{{.name"}}, `argument 1 "{{.name"`},
		{"bad function", CommandConfig{Argv: []string{"echo", "{{nope .x}}"}}, `function "nope" not defined`},
		{"empty env name", CommandConfig{Argv: []string{"true"}, Env: map[string]string{"": "x"}}, "name is empty"},
		{"env name with =", CommandConfig{Argv: []string{"true"}, Env: map[string]string{"A=B": "x"}}, `"A=B"`},
		{"env value with NUL", CommandConfig{Argv: []string{"true"}, Env: map[string]string{"A": "x\x00"}}, "NUL"},
		{"reserved env", CommandConfig{Argv: []string{"true"}, Env: map[string]string{"SCHEDULER_JOB_ID": "1"}}, "reserved"},
		{"exit code 0", CommandConfig{Argv: []string{"true"}, PermanentExitCodes: []int{0}}, "exit code 0"},
		{"exit code 256", CommandConfig{Argv: []string{"true"}, PermanentExitCodes: []int{256}}, "exit code 256"},
		{"negative grace", CommandConfig{Argv: []string{"true"}, KillGrace: -time.Second}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewCommand(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewCommand(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
			}
		})
	}
}

func TestCommandArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		argv    []string
		payload string
		want    []string
		wantErr []string // substrings of the error; nil when none is wanted
	}{
		{"literal", []string{"echo", "a b", "; touch x"}, `{}`, []string{"echo", "a b", "; touch x"}, nil},
		{"empty payload", []string{"echo", "x"}, ``, []string{"echo", "x"}, nil},
		{"null payload", []string{"echo", "x"}, `null`, []string{"echo", "x"}, nil},
		{"fields", []string{"backup", "--db={{.db}}", "{{.n}}"}, `{"db":"main","n":3}`, []string{"backup", "--db=main", "3"}, nil},
		{"big number keeps its text", []string{"echo", "{{.id}}", "{{.f}}"}, `{"id":12345678901234567890,"f":1.5}`, []string{"echo", "12345678901234567890", "1.5"}, nil},
		{"nested", []string{"echo", "{{.a.b}}"}, `{"a":{"b":"deep"}}`, []string{"echo", "deep"}, nil},
		{"program from payload", []string{"{{.prog}}"}, `{"prog":"date"}`, []string{"date"}, nil},
		{"index into a list", []string{"echo", `{{index .l 1}}`}, `{"l":["x","y"]}`, []string{"echo", "y"}, nil},
		{"shell text stays text", []string{"echo", "{{.s}}"}, `{"s":"$(rm -rf /); x"}`, []string{"echo", "$(rm -rf /); x"}, nil},
		{"missing key", []string{"echo", "{{.name}}"}, `{"other":1}`, nil, []string{"argument 1", `"{{.name}}"`, `"name"`}},
		{"missing key names the keys there", []string{"echo", "{{.name}}"}, `{"other":1,"x":2}`, nil, []string{`argument 1 "{{.name}}": the payload has no key "name"; it has other, x`}},
		{"null is not missing", []string{"echo", "{{.name}}"}, `{"name":null}`, nil, []string{`argument 1 "{{.name}}": key "name" of the payload is null`}},
		{"missing nested key", []string{"echo", "x", "{{.a.b}}"}, `{"a":{}}`, nil, []string{"argument 2", `no key "a.b"; "a" has no keys`}},
		{"empty program", []string{"{{.prog}}"}, `{"prog":""}`, nil, []string{"program name is empty"}},
		{"array payload", []string{"echo"}, `[1,2]`, nil, []string{"decode payload"}},
		{"not json", []string{"echo"}, `nope`, nil, []string{"decode payload"}},
		{"trailing data", []string{"echo"}, `{} {}`, nil, []string{"decode payload"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCommand(t, CommandConfig{Argv: tt.argv})
			got, err := c.Args(json.RawMessage(tt.payload))
			if tt.wantErr == nil {
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("Args(%s) = %q, %v, want %q", tt.payload, got, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Args(%s) = %q, want an error", tt.payload, got)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Args(%s) error %q does not contain %q", tt.payload, err, w)
				}
			}
		})
	}
}

func TestCommandArgumentsAreLiteral(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"; touch pwned", "$(touch pwned2)", "`touch pwned3`", "| touch pwned4", "{{.s}}"}
	c := newTestCommand(t, CommandConfig{Argv: append([]string{"echo"}, args...), Dir: dir})
	out, err := runCommand(t, c, testJob(`{"s":"&& touch pwned5"}`))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	want := "; touch pwned $(touch pwned2) `touch pwned3` | touch pwned4 && touch pwned5\n"
	if string(out) != want {
		t.Errorf("output = %q, want %q", out, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("directory has %d entries, want none: a shell interpreted an argument", len(entries))
	}
}

func TestCommandTemplates(t *testing.T) {
	t.Parallel()
	c := newTestCommand(t, CommandConfig{Argv: []string{"printf", "%s|", "{{.name}}", "--count={{.count}}", "{{.where.city}}"}})
	out, err := runCommand(t, c, testJob(`{"name":"a b","count":3,"where":{"city":"Zürich"}}`))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if got, want := string(out), "a b|--count=3|Zürich|"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestCommandBadPayloadIsPermanent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	tests := []struct {
		name    string
		payload string
		want    []string
	}{
		{"missing key", `{"other":1}`, []string{"argument 2", `"name"`}},
		{"undecodable", `{"name":`, []string{"decode payload"}},
		{"not an object", `"name"`, []string{"decode payload"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCommand(t, CommandConfig{Argv: []string{"touch", marker, "{{.name}}"}})
			job := testJob(tt.payload)
			err := c.Work(t.Context(), job)
			if got := fateOf(err); got != fatePermanent {
				t.Fatalf("Work() = %v (%s), want %s", err, got, fatePermanent)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Work() error %q does not contain %q", err, w)
				}
			}
		})
	}
	t.Cleanup(func() {
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the command ran despite a bad payload")
		}
	})
}

func TestCommandStdin(t *testing.T) {
	t.Parallel()
	big := `{"blob":"` + strings.Repeat("x", 200<<10) + `"}`
	tests := []struct {
		name    string
		payload string
		want    string
	}{
		{"payload", `{"a": [1, 2], "b": "c"}`, `{"a": [1, 2], "b": "c"}`},
		{"empty payload", ``, `{}`},
		{"larger than a pipe buffer", big, big[len(big)-queue.MaxOutput:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCommand(t, CommandConfig{Argv: []string{"cat"}})
			out, err := runCommand(t, c, testJob(tt.payload))
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if string(out) != tt.want {
				t.Errorf("output = %.80q (%d bytes), want %.80q (%d bytes)", out, len(out), tt.want, len(tt.want))
			}
		})
	}
}

func TestCommandUnreadStdinDoesNotBlock(t *testing.T) {
	t.Parallel()
	// The payload fills the pipe; neither the program nor the grandchild
	// that inherits stdin reads it.
	payload := `{"blob":"` + strings.Repeat("x", 1<<20) + `"}`
	c := newTestCommand(t, CommandConfig{Argv: sh(`sleep 1000 & exit 0`)})
	if _, err := runCommand(t, c, testJob(payload)); err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestCommandEnvironment(t *testing.T) {
	// Not parallel: it sets the test process's own environment.
	t.Setenv("FOO", "leak")
	t.Setenv("TZ", "Europe/Zurich")
	t.Setenv("LANG", "de_CH.UTF-8")
	inherited := map[string]string{}
	for _, k := range []string{"PATH", "HOME", "LANG", "TZ"} {
		if v, ok := os.LookupEnv(k); ok {
			inherited[k] = v
		}
	}
	if inherited["PATH"] == "" {
		t.Fatal("PATH is not set in the test process")
	}
	zurich, err := time.LoadLocation("Europe/Zurich")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	tests := []struct {
		name   string
		env    map[string]string
		job    *queue.Job
		traced bool // the attempt has a span
		want   map[string]string
	}{
		{
			name: "scheduled job",
			env:  map[string]string{"GREETING": "hello world", "LANG": "C"},
			job: &queue.Job{ID: 42, Key: "nightly@2024-03-10T01:30:00Z", Attempt: 2, Schedule: "nightly",
				ScheduledAt: time.Date(2024, 3, 10, 2, 30, 0, 0, zurich)},
			want: map[string]string{
				"GREETING":               "hello world",
				"LANG":                   "C",
				"SCHEDULER_JOB_ID":       "42",
				"SCHEDULER_KEY":          "nightly@2024-03-10T01:30:00Z",
				"SCHEDULER_ATTEMPT":      "2",
				"SCHEDULER_SCHEDULE":     "nightly",
				"SCHEDULER_SCHEDULED_AT": "2024-03-10T01:30:00Z",
			},
		},
		{
			name: "one-off job",
			job:  &queue.Job{ID: 1, Key: "k", Attempt: 1},
			want: map[string]string{
				"SCHEDULER_JOB_ID":       "1",
				"SCHEDULER_KEY":          "k",
				"SCHEDULER_ATTEMPT":      "1",
				"SCHEDULER_SCHEDULE":     "",
				"SCHEDULER_SCHEDULED_AT": "",
			},
		},
		{
			name:   "traced attempt",
			job:    &queue.Job{ID: 1, Key: "k", Attempt: 1},
			traced: true,
			want: map[string]string{
				"SCHEDULER_JOB_ID":       "1",
				"SCHEDULER_KEY":          "k",
				"SCHEDULER_ATTEMPT":      "1",
				"SCHEDULER_SCHEDULE":     "",
				"SCHEDULER_SCHEDULED_AT": "",
				"TRACEPARENT":            testTraceparent,
				"TRACESTATE":             testTracestate,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := map[string]string{}
			for k, v := range inherited {
				want[k] = v
			}
			for k, v := range tt.want {
				want[k] = v
			}
			c := newTestCommand(t, CommandConfig{Argv: []string{"env"}, Env: tt.env})
			ctx := t.Context()
			if tt.traced {
				ctx = tracedContext(t, ctx)
			}
			r := waitFor(t, startRun(ctx, c, tt.job))
			out, err := r.out, r.err
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			got := map[string]string{}
			for line := range strings.Lines(string(out)) {
				k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
				got[k] = v
			}
			for k, w := range want {
				if g, ok := got[k]; !ok || g != w {
					t.Errorf("env %s = %q (set: %v), want %q", k, g, ok, w)
				}
			}
			for k, g := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("env %s = %q, want it unset", k, g)
				}
			}
		})
	}
}

func TestCommandDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newTestCommand(t, CommandConfig{Argv: []string{"pwd", "-P"}, Dir: dir})
	out, err := runCommand(t, c, testJob(`{}`))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != want {
		t.Errorf("pwd = %q, want %q", got, want)
	}
}

func TestCommandExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   string
		want     string   // fate
		wantText []string // in the error text
	}{
		{"exit 0", `echo fine`, fateDone, nil},
		{"permanent exit code", `echo bad config >&2; exit 3`, fatePermanent, []string{"exit code 3", "bad config"}},
		{"other permanent exit code", `exit 78`, fatePermanent, []string{"exit code 78"}},
		{"other exit code", `echo flaky; exit 4`, fateRetry, []string{"exit code 4", "flaky"}},
		{"killed by a signal", `kill -USR1 $$`, fateRetry, []string{"killed by signal SIGUSR1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCommand(t, CommandConfig{Argv: sh(tt.script), PermanentExitCodes: []int{3, 78}})
			_, err := runCommand(t, c, testJob(`{}`))
			if got := fateOf(err); got != tt.want {
				t.Fatalf("run = %v (%s), want %s", err, got, tt.want)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestCommandOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		script  string
		want    string // the recorded output; "" to skip
		wantLen int
		suffix  string
		fate    string
	}{
		{"stdout and stderr in order", `echo out; echo err >&2; echo out2`, "out\nerr\nout2\n", 13, "out2\n", fateDone},
		{"nothing", `true`, "", 0, "", fateDone},
		{"tail of a long success", `head -c 40000 /dev/zero | tr '\0' a; echo END`, "", queue.MaxOutput, "aaaEND\n", fateDone},
		{"tail of a long failure", `head -c 40000 /dev/zero | tr '\0' b; echo LAST >&2; exit 9`, "", queue.MaxOutput, "bbbLAST\n", fateRetry},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCommand(t, CommandConfig{Argv: sh(tt.script)})
			out, err := runCommand(t, c, testJob(`{}`))
			if got := fateOf(err); got != tt.fate {
				t.Fatalf("run = %v (%s), want %s", err, got, tt.fate)
			}
			if tt.want != "" && string(out) != tt.want {
				t.Errorf("output = %q, want %q", out, tt.want)
			}
			if len(out) != tt.wantLen || !strings.HasSuffix(string(out), tt.suffix) {
				t.Errorf("output = %d bytes ending %.20q, want %d bytes ending %q", len(out), lastBytes(out, 20), tt.wantLen, tt.suffix)
			}
			if err != nil {
				if !strings.Contains(err.Error(), strings.TrimSpace(tt.suffix)) {
					t.Errorf("error %.80q... does not quote the end of the output", err)
				}
				if max := errorOutput + 200; len(err.Error()) > max {
					t.Errorf("error is %d bytes, want at most %d", len(err.Error()), max)
				}
			}
		})
	}
}

func TestCommandCannotStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		dir  string
	}{
		{"no such path", []string{filepath.Join(dir, "missing")}, ""},
		{"not in PATH", []string{"scheduler-test-no-such-program"}, ""},
		{"not executable", []string{notExec}, ""},
		{"a directory", []string{dir}, ""},
		{"no such working directory", []string{"true"}, filepath.Join(dir, "missing")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newTestCommand(t, CommandConfig{Argv: tt.argv, Dir: tt.dir})
			_, err := runCommand(t, c, testJob(`{}`))
			if got := fateOf(err); got != fatePermanent {
				t.Errorf("run = %v (%s), want %s", err, got, fatePermanent)
			}
		})
	}
}

func TestCommandContextDoneBeforeStart(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	c := newTestCommand(t, CommandConfig{Argv: []string{"touch", marker}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := waitFor(t, startRun(ctx, c, testJob(`{}`)))
	if got := fateOf(r.err); got != fateRetry || !errors.Is(r.err, context.Canceled) {
		t.Errorf("run = %v (%s), want a retryable context.Canceled", r.err, got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran after its context was done")
	}
}

func TestCommandCancelKillsGrandchild(t *testing.T) {
	t.Parallel()
	pidPath, pids := pidFIFO(t)
	// The grandchild ignores SIGTERM and holds stdout open; the program
	// itself dies of SIGTERM.
	c := newTestCommand(t, CommandConfig{Argv: sh(`
		sh -c 'trap "" TERM; echo $$ > "$1"; exec sleep 1000' sh "$1" &
		wait`, pidPath)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := startRun(ctx, c, testJob(`{}`))
	pid := waitFor(t, pids)
	killOnFailure(t, pid)
	cancel()
	r := waitFor(t, done)
	if got := fateOf(r.err); got != fateRetry {
		t.Errorf("run = %v (%s), want %s", r.err, got, fateRetry)
	}
	if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "SIGTERM") {
		t.Errorf("run = %v, want context.Canceled and SIGTERM named", r.err)
	}
	waitGone(t, pid)
}

func TestCommandTimeout(t *testing.T) {
	t.Parallel()
	pidPath, pids := pidFIFO(t)
	c := newTestCommand(t, CommandConfig{Argv: sh(`echo $$ > "$1"; exec sleep 1000`, pidPath)})
	// Whether the deadline passes before or after the start, the result
	// is the same retryable deadline error.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	done := startRun(ctx, c, testJob(`{}`))
	r := waitFor(t, done)
	if got := fateOf(r.err); got != fateRetry || !errors.Is(r.err, context.DeadlineExceeded) {
		t.Errorf("run = %v (%s), want a retryable context.DeadlineExceeded", r.err, got)
	}
	select {
	case pid := <-pids:
		waitGone(t, pid)
	default:
	}
}

func TestCommandKillGrace(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	pidPath, pids := pidFIFO(t)
	// Both the program and its child ignore SIGTERM.
	c := newTestCommand(t, CommandConfig{
		Argv: sh(`
			trap "" TERM
			sleep 1000 &
			echo $! > "$1"
			wait`, pidPath),
		KillGrace: 30 * time.Second,
		Clock:     fake,
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := startRun(ctx, c, testJob(`{}`))
	pid := waitFor(t, pids)
	killOnFailure(t, pid)
	cancel()

	graceStarted := make(chan struct{})
	go func() {
		fake.BlockUntil(1)
		close(graceStarted)
	}()
	waitFor(t, graceStarted)
	select {
	case r := <-done:
		t.Fatalf("run returned %v before the grace ended", r.err)
	default:
	}
	fake.Advance(29 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("run returned %v before the grace ended", r.err)
	default:
	}
	fake.Advance(time.Second)
	r := waitFor(t, done)
	if got := fateOf(r.err); got != fateRetry || !strings.Contains(r.err.Error(), "SIGKILL") {
		t.Errorf("run = %v (%s), want a retryable error naming SIGKILL", r.err, got)
	}
	waitGone(t, pid)
}

func TestCommandKillsStraysAfterExit(t *testing.T) {
	t.Parallel()
	pidPath, pids := pidFIFO(t)
	readyPath := fifo(t, "ready")
	// The program succeeds as soon as its child is set up, leaving the child
	// behind; it ignores SIGTERM and holds stdout open.
	c := newTestCommand(t, CommandConfig{Argv: sh(`
		sh -c 'trap "" TERM; echo $$ > "$1"; echo ok > "$2"; exec sleep 1000' sh "$1" "$2" &
		read x < "$2"
		echo parent`, pidPath, readyPath)})
	done := startRun(t.Context(), c, testJob(`{}`))
	pid := waitFor(t, pids)
	killOnFailure(t, pid)
	r := waitFor(t, done)
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	waitGone(t, pid)
}

// TestCommandOutputHeldOpenDoesNotHang: a process the command did not
// start, and so cannot kill, may hold its output pipe open (here the test
// itself, which opens the program's stdout through /proc); Work must not
// wait for it longer than outputDrain.
func TestCommandOutputHeldOpenDoesNotHang(t *testing.T) {
	t.Parallel()
	fake := clock.NewFake(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	pidPath, pids := pidFIFO(t)
	goPath := fifo(t, "go")
	c := newTestCommand(t, CommandConfig{
		Argv: sh(`
			echo before
			echo $$ > "$1"
			read x < "$2"`, pidPath, goPath),
		Clock: fake,
	})
	done := startRun(t.Context(), c, testJob(`{}`))
	pid := waitFor(t, pids)
	held, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/fd/1", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	released := make(chan error, 1)
	go func() { released <- os.WriteFile(goPath, []byte("go\n"), 0) }()
	if err := waitFor(t, released); err != nil {
		t.Fatal(err)
	}

	drainStarted := make(chan struct{})
	go func() {
		fake.BlockUntil(1)
		close(drainStarted)
	}()
	waitFor(t, drainStarted)
	fake.Advance(outputDrain)
	r := waitFor(t, done)
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	if got, want := string(r.out), "before\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestCommandWork(t *testing.T) {
	t.Parallel()
	// The recorded output is checked through run above; Work adds only the
	// call to SetOutput.
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"success", []string{"echo", "{{.msg}}"}, fateDone},
		{"failure", sh(`echo "$1"; exit 3`, "{{.msg}}"), fatePermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var c queue.Handler = newTestCommand(t, CommandConfig{Argv: tt.argv, PermanentExitCodes: []int{3}})
			err := c.Work(t.Context(), testJob(`{"msg":"hi"}`))
			if got := fateOf(err); got != tt.want {
				t.Errorf("Work = %v (%s), want %s", err, got, tt.want)
			}
		})
	}
}

func ExampleCommand_Args() {
	c, err := NewCommand(CommandConfig{Argv: []string{"pg_dump", "--dbname={{.db}}", "--file=/backups/{{.db}}.sql"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	args, err := c.Args(json.RawMessage(`{"db":"orders"}`))
	fmt.Printf("%q %v\n", args, err)
	_, err = c.Args(json.RawMessage(`{"database":"orders"}`))
	fmt.Println(err)
	// Output:
	// ["pg_dump" "--dbname=orders" "--file=/backups/orders.sql"] <nil>
	// expand command argument 1 "--dbname={{.db}}": the payload has no key "db"; it has database
}
