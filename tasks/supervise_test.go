//go:build linux

package tasks

import (
	"context"
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

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// envDaemon, set to a directory, makes the test binary a daemon that runs
// daemonScript as a command and never returns (see daemonMain).
const envDaemon = "TASKS_TEST_DAEMON"

// daemonScript starts a process in the program's group and one that leaves
// it (setsid), then writes "PROGRAM SUPERVISOR GROUP_MEMBER SETSID" to
// $1/pids (by a rename, so that the file appears whole) and waits.
const daemonScript = `
sleep 301 &
member=$!
setsid sh -c 'echo $$ > "$1/fifo"; exec sleep 301' sh "$1" &
read escaped < "$1/fifo"
echo "$$ $PPID $member $escaped" > "$1/pids.tmp"
mv "$1/pids.tmp" "$1/pids"
wait`

// daemonMain is the test binary run as a daemon by
// TestCommandDiesWithItsDaemon: it runs daemonScript through a Command.
func daemonMain(dir string) int {
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := NewCommand(CommandConfig{Argv: sh(daemonScript, dir)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = c.Work(context.Background(), testJob(`{}`))
	fmt.Fprintf(os.Stderr, "command returned: %v\n", err)
	return 1
}

func needSetsid(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
}

// textFIFO returns a named pipe for a child to write a line to, and the
// channel that line arrives on.
func textFIFO(t *testing.T, name string) (string, <-chan string) {
	path := fifo(t, name)
	ch := make(chan string, 1)
	go func() {
		if b, err := os.ReadFile(path); err == nil {
			ch <- strings.TrimSpace(string(b))
		}
	}()
	return path, ch
}

// TestCommandDiesWithItsDaemon: when the daemon is SIGKILLed, its
// command's supervisor kills the program, a process of its group and one
// that left the group, and exits itself.
func TestCommandDiesWithItsDaemon(t *testing.T) {
	t.Parallel()
	needSetsid(t)
	dir := t.TempDir()
	daemon := exec.Command(os.Args[0], "-test.run=^$")
	daemon.Env = append(os.Environ(), envDaemon+"="+dir)
	var stderr strings.Builder
	daemon.Stderr = &stderr
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() {
		waitErr = daemon.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		daemon.Process.Kill()
		<-exited
	})

	var pids []int
	deadline := time.Now().Add(failAfter)
	for pids == nil {
		if b, err := os.ReadFile(filepath.Join(dir, "pids")); err == nil {
			for _, f := range strings.Fields(string(b)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatalf("pids %q: %v", b, err)
				}
				pids = append(pids, pid)
				killOnFailure(t, pid)
			}
		}
		select {
		case <-exited:
			t.Fatalf("daemon exited (%v) before its command started: %s", waitErr, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the command's pids")
		}
		time.Sleep(10 * time.Millisecond) // poll period of another process's file, not a sync point
	}

	killed := time.Now()
	daemon.Process.Kill()
	<-exited
	for _, pid := range pids {
		waitGone(t, pid)
	}
	t.Logf("program, supervisor, group member and setsid'd process %v gone %v after the daemon's SIGKILL",
		pids, time.Since(killed).Round(time.Millisecond))
}

// TestCommandKillsEscapedProcessAtEnd: a process that left the program's
// group (setsid) is killed when the program exits, and the job is done.
func TestCommandKillsEscapedProcessAtEnd(t *testing.T) {
	t.Parallel()
	needSetsid(t)
	setsidPath := fifo(t, "setsid")
	c := newTestCommand(t, CommandConfig{Argv: sh(`
		setsid sh -c 'echo $$ > "$1"; exec sleep 301' sh "$1" &
		read pid < "$1"
		echo "$pid"
		exit 0`, setsidPath)})
	out, err := runCommand(t, c, testJob(`{}`))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	killOnFailure(t, pid)
	waitGone(t, pid)
}

// TestCommandCancelKillsEscapedProcess: at the end of the kill grace, a
// process that left the program's group and ignores SIGTERM is killed with
// the program.
func TestCommandCancelKillsEscapedProcess(t *testing.T) {
	t.Parallel()
	needSetsid(t)
	fake := clock.NewFake(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	setsidPath := fifo(t, "setsid")
	pidPath, pids := pidFIFO(t)
	c := newTestCommand(t, CommandConfig{
		Argv: sh(`
			trap "" TERM
			setsid sh -c 'echo $$ > "$1"; exec sleep 301' sh "$1" &
			read pid < "$1"
			echo "$pid" > "$2"
			wait`, setsidPath, pidPath),
		KillGrace: 30 * time.Second,
		Clock:     fake,
	})
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	done := startRun(ctx, c, testJob(`{}`))
	pid := waitFor(t, pids)
	killOnFailure(t, pid)
	cancel(&queue.TimeoutError{Timeout: time.Minute})

	graceStarted := make(chan struct{})
	go func() {
		fake.BlockUntil(1)
		close(graceStarted)
	}()
	waitFor(t, graceStarted)
	fake.Advance(30 * time.Second)
	r := waitFor(t, done)
	if got := fateOf(r.err); got != fateRetry || !strings.Contains(r.err.Error(), "SIGKILL") {
		t.Errorf("run = %v (%s), want a retryable error naming SIGKILL", r.err, got)
	}
	waitGone(t, pid)
}

// TestCommandCancelTermsEscapedProcess: SIGTERM at the end of the context
// reaches a process that left the program's group, which can then end
// cleanly within the grace.
func TestCommandCancelTermsEscapedProcess(t *testing.T) {
	t.Parallel()
	needSetsid(t)
	fake := clock.NewFake(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	setsidPath := fifo(t, "setsid")
	pidPath, pids := pidFIFO(t)
	termPath, terms := textFIFO(t, "term")
	// The program ignores SIGTERM once the escaped process is set up (a
	// signal ignored when it starts could not be trapped), and waits for
	// it.
	c := newTestCommand(t, CommandConfig{
		Argv: sh(`
			setsid sh -c 'trap "echo term > \"$2\"; exit 0" TERM; echo $$ > "$1"; sleep 301 & wait' sh "$1" "$3" &
			read pid < "$1"
			trap "" TERM
			echo "$pid" > "$2"
			wait`, setsidPath, pidPath, termPath),
		KillGrace: 30 * time.Second,
		Clock:     fake,
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := startRun(ctx, c, testJob(`{}`))
	pid := waitFor(t, pids)
	killOnFailure(t, pid)
	cancel()
	if got := waitFor(t, terms); got != "term" {
		t.Errorf("escaped process wrote %q, want term", got)
	}
	r := waitFor(t, done)
	if r.err != nil {
		t.Errorf("run = %v, want success: the program exited 0 within the grace", r.err)
	}
	waitGone(t, pid)
}

// schedulerBinary builds cmd/scheduler once per test binary, without the
// race detector.
var schedulerBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tasks-scheduler-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "scheduler")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/scheduler").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ../cmd/scheduler: %v\n%s", err, out)
	}
	return bin, nil
})

// BenchmarkCommandStart runs /bin/true through a Command, under its
// supervisor (the scheduler's binary, as the daemon would start it),
// against os/exec alone.
func BenchmarkCommandStart(b *testing.B) {
	bin, err := schedulerBinary()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(filepath.Dir(bin)) })
	job := testJob(`{}`)
	b.Run("os-exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bc := range []struct {
		name   string
		limits Limits
	}{
		{"command", Limits{}},
		{"command-with-limits", Limits{OpenFilesMax: 64}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := NewCommand(CommandConfig{Argv: []string{"/bin/true"}, Limits: bc.limits, Launcher: bin})
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := c.run(b.Context(), job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
