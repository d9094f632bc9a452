//go:build linux

package tasks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// envHelper selects what the test binary does when a test runs it as a
// command's program (see helperMain).
const envHelper = "TASKS_TEST_HELPER"

// TestMain lets the test binary be a command's supervisor and launcher, as
// cmd/scheduler's main is, a program for the limits to bind (see
// helperMain), and a daemon to kill (see daemonMain).
func TestMain(m *testing.M) {
	if code, ok := RunSubprocess(os.Args); ok {
		os.Exit(code)
	}
	if dir := os.Getenv(envDaemon); dir != "" {
		os.Exit(daemonMain(dir))
	}
	if os.Getenv(envOpenFiles) != "" {
		os.Exit(openFilesMain())
	}
	if mode := os.Getenv(envHelper); mode != "" {
		os.Exit(helperMain(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperMain is the test binary run as a command's program. Each mode has
// a bound of its own, so that a limit that is not applied ends the program
// with exit 0 ("not stopped") rather than exhausting the machine.
func helperMain(mode string, args []string) int {
	switch mode {
	case "spin": // burns CPU for up to 60s of CPU time
		for {
			for range 1 << 24 {
			}
			var ru syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			if time.Duration(ru.Utime.Nano()) > time.Minute {
				fmt.Println("spun a minute: not stopped")
				return 0
			}
		}
	case "files": // opens /dev/null up to 10000 times
		for n := 0; n < 10000; n++ {
			if _, err := os.Open(os.DevNull); err != nil {
				fmt.Printf("opened %d files: %v\n", n, err)
				return 1
			}
		}
		fmt.Println("opened 10000 files: not stopped")
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

// helperCommand is a Command running the test binary in helper mode under
// limits.
func helperCommand(t *testing.T, mode string, limits Limits, args ...string) *Command {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return newTestCommand(t, CommandConfig{
		Argv:   append([]string{self}, args...),
		Env:    map[string]string{envHelper: mode},
		Limits: limits,
	})
}

// runLimited runs c under a one-minute deadline: a limit that does not
// hold ends in a timeout, which the tests reject, instead of a hung test.
func runLimited(t *testing.T, c *Command) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := waitFor(t, startRun(ctx, c, testJob(`{}`)))
	if errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("run = %v: the limit did not stop the command", r.err)
	}
	return r.out, r.err
}

// allocProgram builds testdata/alloc once per test binary, without the
// race detector.
var allocProgram = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tasks-alloc-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "alloc")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/alloc").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./testdata/alloc: %v\n%s", err, out)
	}
	return bin, nil
})

func TestCommandMemoryLimit(t *testing.T) {
	t.Parallel()
	bin, err := allocProgram()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(bin)) })
	const limit = 256 << 20
	c := newTestCommand(t, CommandConfig{Argv: []string{bin, strconv.Itoa(2 * limit)}, Limits: Limits{MemoryMax: limit}})
	out, err := runLimited(t, c)
	if fateOf(err) != fatePermanent || !strings.Contains(err.Error(), "memory limit 256MiB exceeded") {
		t.Fatalf("run = %v (%s), want permanent, memory limit 256MiB exceeded; output %q", err, fateOf(err), out)
	}
	if strings.Contains(string(out), "not stopped") {
		t.Errorf("output %q: the program was not stopped", out)
	}
}

func TestCommandCPULimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    func(t *testing.T, l Limits) *Command
		want string
	}{
		// A shell does not catch SIGXCPU: the soft limit ends it.
		{"killed by SIGXCPU", func(t *testing.T, l Limits) *Command {
			return newTestCommand(t, CommandConfig{Argv: sh(`while :; do :; done`), Limits: l})
		}, "cpu time limit 1s exceeded (killed by signal SIGXCPU, cpu time "},
		// Go ignores SIGXCPU: the hard limit, a second later, kills it.
		{"killed at the hard limit", func(t *testing.T, l Limits) *Command {
			return helperCommand(t, "spin", l)
		}, "cpu time limit 1s exceeded (killed by signal SIGKILL, cpu time "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := runLimited(t, tt.c(t, Limits{CPUTimeMax: time.Second}))
			if fateOf(err) != fatePermanent || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run = %v (%s), want permanent, %s; output %q", err, fateOf(err), tt.want, out)
			}
		})
	}
}

func TestCommandOverLimitRetryable(t *testing.T) {
	t.Parallel()
	c := newTestCommand(t, CommandConfig{Argv: sh(`while :; do :; done`), Limits: Limits{CPUTimeMax: time.Second, Retryable: true}})
	_, err := runLimited(t, c)
	if fateOf(err) != fateRetry || !strings.Contains(err.Error(), "cpu time limit 1s exceeded") {
		t.Fatalf("run = %v (%s), want an ordinary failure, cpu time limit 1s exceeded", err, fateOf(err))
	}
}

func TestCommandOpenFilesLimit(t *testing.T) {
	t.Parallel()
	c := helperCommand(t, "files", Limits{OpenFilesMax: 16})
	out, err := runLimited(t, c)
	// Exceeding it leaves no trace but the program's own report: an
	// ordinary failure, by its exit code.
	if fateOf(err) != fateRetry || !strings.Contains(err.Error(), "exit code 1") {
		t.Fatalf("run = %v (%s), want an ordinary failure with exit code 1; output %q", err, fateOf(err), out)
	}
	var n int
	if _, serr := fmt.Sscanf(string(out), "opened %d files", &n); serr != nil || n >= 16 || !strings.Contains(string(out), "too many open files") {
		t.Errorf("output %q: want fewer than 16 files opened, then too many open files", out)
	}
}

// TestCommandLimitsLeaveOtherFailuresAlone checks that a failure far from
// every limit keeps its own fate and text.
func TestCommandLimitsLeaveOtherFailuresAlone(t *testing.T) {
	t.Parallel()
	l := Limits{MemoryMax: 256 << 20, CPUTimeMax: time.Minute, OpenFilesMax: 64}
	c := newTestCommand(t, CommandConfig{Argv: sh(`echo flaky; exit 4`), Limits: l, PermanentExitCodes: []int{3}})
	_, err := runLimited(t, c)
	if fateOf(err) != fateRetry || err.Error() != `command /bin/sh: exit code 4; output: "flaky\n"` {
		t.Errorf("run = %v (%s), want the plain retryable exit", err, fateOf(err))
	}
	c = newTestCommand(t, CommandConfig{Argv: sh(`exit 3`), Limits: l, PermanentExitCodes: []int{3}})
	if _, err := runLimited(t, c); fateOf(err) != fatePermanent || strings.Contains(err.Error(), "limit") {
		t.Errorf("run = %v (%s), want the permanent exit code 3", err, fateOf(err))
	}
	c = newTestCommand(t, CommandConfig{Argv: sh(`echo "$SCHEDULER_JOB_ID"; ulimit -n`), Limits: l})
	if out, err := runLimited(t, c); err != nil || string(out) != "7\n64\n" {
		t.Errorf("run = %q, %v; want the job's environment and the limit", out, err)
	}
}

func TestCommandLaunchFailures(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Limits{OpenFilesMax: 64}
	tests := []struct {
		name string
		cfg  CommandConfig
		want string
	}{
		{"program not found", CommandConfig{Argv: []string{"no-such-program-x"}, Limits: l}, "executable file not found"},
		{"program not executable", CommandConfig{Argv: []string{notExec}, Limits: l}, "start command " + notExec + ": permission denied"},
		{"launcher without RunSubprocess", CommandConfig{Argv: []string{"true"}, Limits: l, Launcher: "/bin/true"}, "must call tasks.RunSubprocess"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := runLimited(t, newTestCommand(t, tt.cfg))
			if fateOf(err) != fatePermanent || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run = %v (%s), want permanent, %q", err, fateOf(err), tt.want)
			}
		})
	}
}

// envOpenFiles makes the test binary print the soft open-files limit that
// a command gets without limits and with limits that leave open files
// alone (see openFilesMain).
const envOpenFiles = "TASKS_TEST_OPEN_FILES"

func openFilesMain() int {
	for _, l := range []Limits{{}, {MemoryMax: 1 << 30}} {
		c, err := NewCommand(CommandConfig{Argv: sh(`ulimit -Sn`), Limits: l})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		out, err := c.run(context.Background(), testJob(`{}`))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.Stdout.Write(out)
	}
	return 0
}

// TestCommandLimitsKeepOpenFilesSoftLimit: the Go runtime raises its own
// soft open-files limit; a command gets the daemon's original, with limits
// that do not set open_files_max as without limits.
func TestCommandLimitsKeepOpenFilesSoftLimit(t *testing.T) {
	t.Parallel()
	var hard syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &hard); err != nil {
		t.Fatal(err)
	}
	if hard.Max < 256 {
		t.Skipf("hard open-files limit %d: too low to lower the soft one", hard.Max)
	}
	// The daemon starts with a soft limit below its hard one, as under
	// systemd (1024 of 524288).
	daemon := exec.Command("/bin/sh", "-c", `ulimit -Sn 128 && exec "$@"`, "sh", os.Args[0], "-test.run=^$")
	daemon.Env = append(os.Environ(), envOpenFiles+"=1")
	out, err := daemon.CombinedOutput()
	if err != nil || string(out) != "128\n128\n" {
		t.Errorf("soft open-files limit without limits, then with memory_max: %q, %v; want 128 twice", out, err)
	}
}

func TestLimitsString(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		l    Limits
		want string
	}{
		{Limits{}, ""},
		{Limits{MemoryMax: 512 << 20, CPUTimeMax: 10 * time.Minute, OpenFilesMax: 64}, "memory_max 512MiB, cpu_time_max 10m, open_files_max 64"},
		{Limits{MemoryMax: 3 << 30}, "memory_max 3GiB"},
		{Limits{MemoryMax: 1536 << 10}, "memory_max 1536KiB"},
		{Limits{MemoryMax: 1000}, "memory_max 1000B"},
	} {
		if got := tt.l.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.l, got, tt.want)
		}
	}
}
