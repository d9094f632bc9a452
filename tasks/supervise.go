package tasks

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// Reserved first arguments by which a Command starts its binary again (see
// RunSubprocess).
const (
	supervisorArg = "__scheduler-supervise"
	// supervisorRaceEnv is added to a race-built daemon's supervisors'
	// environment (see startSupervisor).
	supervisorRaceEnv = "GORACE=atexit_sleep_ms=0"
	launcherArg       = "__scheduler-exec-limited"
)

// A supervisor's descriptors after the standard streams: the lifeline's
// read end (only the daemon holds the write end) and the status pipe.
const (
	lifelineFD = 3
	statusFD   = 4
)

// Messages of the status pipe to the daemon: ready first, which tells a
// binary that does not call RunSubprocess from a supervisor; then started
// or failed; after started, exited once nothing the command started is
// left.
const (
	msgReady   = 'S'
	msgStarted = 'P' // "P PID\n": the program runs.
	msgFailed  = 'F' // "F STAGE ERRNO\n": it could not be started.
	msgExited  = 'X' // "X WAITSTATUS UTIME_US STIME_US MAXRSS\n"
)

// reapPoll is how often a supervisor checks killed descendants that are
// not its children, whose deaths it is not told of.
const reapPoll = 100 * time.Millisecond

// RunSubprocess runs the process as a command's supervisor or launcher
// when args, its os.Args, say so, and then main must exit with code at
// once. For other args it returns ok false, doing nothing.
//
// A binary that runs commands must call it first thing in main, before
// flag parsing; so must the TestMain of tests that run commands. A
// Command started by a binary that does not call it fails and says so.
// The package doc says what the supervisor does.
func RunSubprocess(args []string) (code int, ok bool) {
	if len(args) < 2 {
		return 0, false
	}
	switch args[1] {
	case supervisorArg:
		return supervise(args), true
	case launcherArg:
		return launch(args), true
	}
	return 0, false
}

// supervise is the supervisor's life: args are [argv0, supervisorArg,
// LIMITS, PATH, ARGV...], LIMITS from rlimitSpec, empty for none.
func supervise(args []string) int {
	if raceBuild && os.Getenv("GORACE") == supervisorRaceEnv[len("GORACE="):] {
		os.Unsetenv("GORACE") // set by startSupervisor for this process alone
	}
	status := os.NewFile(statusFD, "supervisor status")
	if _, err := status.Write([]byte{msgReady}); err != nil {
		// Not started by a Command: nobody to report to.
		return 2
	}
	// Only the supervisor may hold these: the status pipe's end tells the
	// daemon it is gone.
	syscall.CloseOnExec(statusFD)
	syscall.CloseOnExec(lifelineFD)
	if len(args) < 5 {
		reportFailure(status, "arguments", syscall.EINVAL)
		return 2
	}
	spec, path, argv := args[2], args[3], args[4:]
	if err := becomeSubreaper(); err != nil {
		reportFailure(status, "subreaper", err)
		return 2
	}
	// SIGCHLD wakes the loops below; SIGTERM asks the command to stop.
	// Noted from here, none sent during the start is lost. Stray SIGHUP
	// and SIGINT are ignored: a dead supervisor would leave the command
	// running alone.
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGCHLD, syscall.SIGHUP, syscall.SIGINT)

	var p *program
	var stage string
	var err error
	if spec == "" {
		p, err = startProgram(path, argv)
		stage = "exec"
	} else {
		p, stage, err = startLauncher(spec, path, argv)
	}
	if err != nil {
		reportFailure(status, stage, err)
		return 0
	}
	fmt.Fprintf(status, "%c %d\n", msgStarted, p.pid)
	// The daemon's stdin writer must see EPIPE once the program's
	// processes are gone.
	os.Stdin.Close()
	os.Stdout.Close()

	lost := make(chan struct{})
	go watchLifeline(os.NewFile(lifelineFD, "lifeline"), lost)
	p.wait(signals, lost)
	ws, ru := p.reap()
	reapAll(signals)
	fmt.Fprintf(status, "%c %d %d %d %d\n", msgExited, uint32(ws),
		ru.Utime.Nano()/1e3, ru.Stime.Nano()/1e3, ru.Maxrss)
	return 0
}

func reportFailure(status io.Writer, stage string, err error) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = syscall.EINVAL
	}
	fmt.Fprintf(status, "%c %s %d\n", msgFailed, stage, int(errno))
}

// watchLifeline closes lost when the daemon closes the lifeline or dies.
func watchLifeline(f *os.File, lost chan<- struct{}) {
	defer close(lost)
	var b [1]byte
	for {
		if _, err := f.Read(b[:]); err != nil {
			return
		}
	}
}

// startProgram starts the program in a process group of its own.
func startProgram(path string, argv []string) (*program, error) {
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   syscall.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return nil, err
	}
	return &program{pid: pid}, nil
}

// startLauncher starts the launcher in its own process group and waits
// until it is the program, or returns its failing stage and error.
func startLauncher(spec, path string, argv []string) (p *program, stage string, err error) {
	self, err := DefaultLauncher()
	if err != nil {
		return nil, "launch", err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "launch", err
	}
	defer r.Close()
	pid, err := syscall.ForkExec(self, append([]string{self, launcherArg, spec, path}, argv...), &syscall.ProcAttr{
		Env:   syscall.Environ(),
		Files: []uintptr{0, 1, 2, w.Fd()},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	w.Close()
	if err != nil {
		return nil, "launch", err
	}
	p = &program{pid: pid}
	// The pipe ends at the program's execve, or at the launcher's exit.
	b, err := io.ReadAll(r)
	s, ready := strings.CutPrefix(string(b), launcherReady)
	switch {
	case err != nil:
		stage = "launch"
	case !ready:
		stage, err = "launch", syscall.EINVAL
	case s != "":
		var num string
		stage, num, _ = strings.Cut(s, " ")
		n, _ := strconv.Atoi(num)
		err = syscall.Errno(n)
	default:
		return p, "", nil
	}
	p.kill(syscall.SIGKILL)
	p.reap()
	return nil, stage, err
}

// wait returns once the program exits, unreaped so that its group ID
// stays reserved. It passes SIGTERM on, and kills all once lost closes.
func (p *program) wait(signals <-chan os.Signal, lost <-chan struct{}) {
	for !p.exited() {
		select {
		case <-lost:
			lost = nil
			p.kill(syscall.SIGKILL)
		case sig := <-signals:
			if sig == syscall.SIGTERM {
				p.kill(syscall.SIGTERM)
			}
		}
	}
}

// kill sends sig to the program's group, still its own as it is unreaped,
// then to every other descendant of the supervisor.
func (p *program) kill(sig syscall.Signal) {
	_ = syscall.Kill(-p.pid, sig) // ESRCH: nobody left in the group
	signalDescendants(sig, p.pid)
}

// reapAll kills and reaps every process left under the supervisor, until
// none is left or those left cannot be signalled (they changed user).
func reapAll(signals <-chan os.Signal) {
	clk := clock.Real{}
	for {
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil { // ECHILD: no child left
				return
			}
			if pid == 0 {
				break
			}
		}
		// Children are alive: kill every descendant, then wait for news.
		if signalDescendants(syscall.SIGKILL, 0) == 0 {
			return
		}
		select {
		case <-signals:
		case <-clk.After(reapPoll):
		}
	}
}
