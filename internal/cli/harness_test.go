package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/tasks"
)

// binary is the scheduler built once for the end-to-end tests.
var binary string

// binDir holds the binaries the tests build.
var binDir string

// releaseVersion is what releaseBinary's -version must print.
const releaseVersion = "v9.8.7-release-test"

var (
	releaseOnce sync.Once
	releasePath string
	releaseErr  error
)

// releaseBinary builds the scheduler as a release is built, without the
// schedulertest tag and with its version set by -ldflags, once, and returns
// its path.
func releaseBinary(t testing.TB) string {
	t.Helper()
	releaseOnce.Do(func() {
		releasePath = filepath.Join(binDir, "scheduler-release")
		build := exec.Command("go", "build", "-ldflags", "-X main.version="+releaseVersion, "-o", releasePath, "../../cmd/scheduler")
		out, err := build.CombinedOutput()
		if err != nil {
			releaseErr = fmt.Errorf("build release scheduler: %v\n%s", err, out)
		}
	})
	if releaseErr != nil {
		t.Fatal(releaseErr)
	}
	return releasePath
}

func TestMain(m *testing.M) {
	// The daemons some tests run in this process start their commands'
	// supervisors from this binary.
	if code, ok := tasks.RunSubprocess(os.Args); ok {
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "scheduler-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "scheduler")
	// The schedulertest tag keeps the test hooks in (see releaseBinary for
	// a build without them).
	build := exec.Command("go", "build", "-race", "-tags", "schedulertest", "-o", binary, "../../cmd/scheduler")
	if os.Getenv("SCHEDULER_E2E_NORACE") != "" {
		build = exec.Command("go", "build", "-tags", "schedulertest", "-o", binary, "../../cmd/scheduler")
	}
	binDir = dir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build scheduler:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// deadline is the failure bound of every wait in these tests.
const deadline = 3 * time.Minute

// daemonProcess is a scheduler process under test.
type daemonProcess struct {
	t    testing.TB
	cmd  *exec.Cmd
	dir  string
	mu   sync.Mutex
	logs bytes.Buffer
	cond *sync.Cond
	done chan struct{}
	err  error
}

// startDaemon runs the scheduler in dir with args, and waits until it logs
// that it started.
func startDaemon(t testing.TB, dir string, env []string, args ...string) *daemonProcess {
	t.Helper()
	d := &daemonProcess{t: t, dir: dir, done: make(chan struct{})}
	d.cond = sync.NewCond(&d.mu)
	d.cmd = exec.Command(binary, args...)
	d.cmd.Dir = dir
	d.cmd.Env = append(os.Environ(), env...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.logs.WriteString(sc.Text() + "\n")
			d.cond.Broadcast()
			d.mu.Unlock()
		}
		d.err = d.cmd.Wait()
		d.mu.Lock()
		close(d.done)
		d.cond.Broadcast()
		d.mu.Unlock()
	}()
	t.Cleanup(func() {
		d.cmd.Process.Signal(syscall.SIGKILL)
		<-d.done
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log())
		}
	})
	d.waitLog("scheduler started")
	return d
}

func (d *daemonProcess) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.logs.String()
}

// waitLog waits until the daemon's log contains s, and returns the log.
func (d *daemonProcess) waitLog(s string) string {
	d.t.Helper()
	return d.waitLogCount(s, 1)
}

// waitLogCount waits until s appears n times in the log.
func (d *daemonProcess) waitLogCount(s string, n int) string {
	d.t.Helper()
	timer := time.AfterFunc(deadline, func() {
		d.mu.Lock()
		d.cond.Broadcast()
		d.mu.Unlock()
	})
	defer timer.Stop()
	start := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for strings.Count(d.logs.String(), s) < n {
		select {
		case <-d.done:
			d.t.Fatalf("daemon exited (%v) before logging %q %d times", d.err, s, n)
		default:
		}
		if time.Since(start) >= deadline {
			d.t.Fatalf("timed out waiting for %q in the log", s)
		}
		d.cond.Wait()
	}
	return d.logs.String()
}

// wait waits for the daemon to exit and returns its error.
func (d *daemonProcess) wait() error {
	d.t.Helper()
	select {
	case <-d.done:
		return d.err
	case <-time.After(deadline):
		d.t.Fatal("daemon did not exit")
		return nil
	}
}

func (d *daemonProcess) signal(sig os.Signal) {
	d.t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		d.t.Fatal(err)
	}
}

// cli runs the scheduler once in dir and returns its stdout, stderr and exit
// code.
func cli(t testing.TB, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run scheduler %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// mustCLI runs the scheduler once and fails the test unless it exits 0.
func mustCLI(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, errs, code := cli(t, dir, args...)
	if code != 0 {
		t.Fatalf("scheduler %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, errs)
	}
	return out
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// record is a line a test job appended to its record file.
type record struct {
	key, attempt, scheduledAt string
}

// recorderScript appends "$SCHEDULER_KEY $SCHEDULER_ATTEMPT $SCHEDULER_SCHEDULED_AT"
// to the file given as its first argument.
const recorderScript = `#!/bin/sh
echo "$SCHEDULER_KEY $SCHEDULER_ATTEMPT ${SCHEDULER_SCHEDULED_AT:--}" >> "$1"
`

func readRecords(t testing.TB, path string) []record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []record
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			out = append(out, record{f[0], f[1], f[2]})
		}
	}
	return out
}

// waitRecords waits until the record file has at least n lines.
func waitRecords(t testing.TB, path string, n int) []record {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		rs := readRecords(t, path)
		if len(rs) >= n {
			return rs
		}
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %d records in %s (have %d)", n, path, len(rs))
		}
		time.Sleep(20 * time.Millisecond) // polling a file another process writes; not a sync point
	}
}

// eventually polls cond until it holds or the deadline fails the test.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling another process's effect; not a sync point
	}
}

var _ = io.Discard
