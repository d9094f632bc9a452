package tasks

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/scheduler-run/scheduler/queue"
)

// supervisor is the daemon's side of a command's supervisor (see
// RunSubprocess).
type supervisor struct {
	cmd *exec.Cmd
	// lifeline is the only write end of the lifeline: closing it, or the
	// daemon's death, kills the command.
	lifeline *os.File
	statusR  *os.File
	status   *bufio.Reader
}

// startSupervisor starts launcher as the supervisor of path with args
// (args[0] the name it sees), l, env, dir, stdin and both outputs to out.
func startSupervisor(launcher, path string, args []string, l Limits, env []string, dir string, stdin, out *os.File) (*supervisor, error) {
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create lifeline: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, fmt.Errorf("create status pipe: %w", err)
	}
	argv0 := launcher
	if def, err := DefaultLauncher(); err == nil && launcher == def && len(os.Args) > 0 {
		argv0 = os.Args[0] // what ps shows: the daemon's name, not /proc/self/exe
	}
	if raceBuild {
		// Else a race-built supervisor holds every command's end a
		// second longer. It removes this from the program's env.
		env = append(env[:len(env):len(env)], supervisorRaceEnv)
	}
	cmd := &exec.Cmd{
		Path:   launcher,
		Args:   append([]string{argv0, supervisorArg, l.rlimitSpec(), path}, args...),
		Env:    env,
		Dir:    dir,
		Stdin:  stdin,
		Stdout: out,
		Stderr: out,
		// ExtraFiles start at descriptor 3. The daemon's pipes are
		// close-on-exec, so no other child holds their ends.
		ExtraFiles: []*os.File{lifelineFD - 3: lifeR, statusFD - 3: statusW},
		// Its own group: a terminal's signals to the daemon's group do
		// not reach it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	err = cmd.Start()
	lifeR.Close()
	statusW.Close()
	if err != nil {
		lifeW.Close()
		statusR.Close()
		return nil, err
	}
	return &supervisor{cmd: cmd, lifeline: lifeW, statusR: statusR, status: bufio.NewReaderSize(statusR, 128)}, nil
}

func (s *supervisor) pid() int { return s.cmd.Process.Pid }

// started waits until the supervisor has started the program and returns
// its pid, or why not. No command code runs meanwhile, so it is short.
func (s *supervisor) started(name string, l Limits) (int, error) {
	if b, err := s.status.ReadByte(); err != nil || b != msgReady {
		return 0, queue.Permanent(fmt.Errorf("start command %s: %s did not supervise it: a binary that runs commands must call tasks.RunSubprocess first in its main", name, s.cmd.Path))
	}
	line, err := s.status.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("start command %s: its supervisor exited before starting it", name)
	}
	f := strings.Fields(line[1:])
	switch line[0] {
	case msgStarted:
		if len(f) == 1 {
			if pid, err := strconv.Atoi(f[0]); err == nil {
				return pid, nil
			}
		}
	case msgFailed:
		if len(f) == 2 {
			if n, err := strconv.Atoi(f[1]); err == nil {
				return 0, startFailure(name, f[0], syscall.Errno(n), l)
			}
		}
	}
	return 0, fmt.Errorf("start command %s: supervisor said %q", name, line)
}

// programExit is how a program ended, as its supervisor reported it; err
// when it reported nothing.
type programExit struct {
	ws  syscall.WaitStatus
	ru  syscall.Rusage
	err error
}

// wait returns the program's exit once the supervisor has exited, which
// is once nothing the command started is left.
func (s *supervisor) wait() programExit {
	line, readErr := s.status.ReadString('\n')
	waitErr := s.cmd.Wait()
	if readErr == nil && len(line) > 0 && line[0] == msgExited {
		var e programExit
		var ws uint32
		var utime, stime int64
		_, err := fmt.Sscanf(line[1:], "%d %d %d %d", &ws, &utime, &stime, &e.ru.Maxrss)
		if err == nil {
			e.ws = syscall.WaitStatus(ws)
			e.ru.Utime = syscall.NsecToTimeval(utime * 1e3)
			e.ru.Stime = syscall.NsecToTimeval(stime * 1e3)
			return e
		}
	}
	if waitErr == nil {
		waitErr = errors.New("exit status 0")
	}
	return programExit{err: fmt.Errorf("its supervisor ended without reporting its exit (%w)", waitErr)}
}

// signal sends sig to the supervisor, which passes SIGTERM on. A
// supervisor already gone is no failure.
func (s *supervisor) signal(sig syscall.Signal) error {
	err := s.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// kill closes the lifeline: the supervisor kills the program's group and
// every descendant.
func (s *supervisor) kill() { _ = s.lifeline.Close() }

// close releases the daemon's ends of the pipes.
func (s *supervisor) close() {
	s.kill()
	s.statusR.Close()
}
