//go:build unix && !linux

package tasks

import (
	"errors"
	"syscall"
)

// program is the supervisor's child that runs the command's program.
type program struct {
	pid    int
	ws     syscall.WaitStatus
	ru     syscall.Rusage
	reaped bool
}

// exited reports whether the program has exited, reaping it: without
// waitid's WNOWAIT its group ID could be reused before the group is
// killed.
func (p *program) exited() bool {
	for !p.reaped {
		pid, err := syscall.Wait4(p.pid, &p.ws, syscall.WNOHANG, &p.ru)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil || pid == p.pid:
			p.reaped = true
		}
		break
	}
	return p.reaped
}

// reap waits for the program and returns its wait status and resource
// usage.
func (p *program) reap() (syscall.WaitStatus, syscall.Rusage) {
	for !p.reaped {
		_, err := syscall.Wait4(p.pid, &p.ws, 0, &p.ru)
		if !errors.Is(err, syscall.EINTR) {
			p.reaped = true
		}
	}
	return p.ws, p.ru
}

// becomeSubreaper does nothing: orphans go to init here, out of reach.
func becomeSubreaper() error { return nil }

// signalDescendants finds no descendants here: it signals none.
func signalDescendants(syscall.Signal, int) int { return 0 }

// preparedExec is an execve(2) through syscall.Exec.
type preparedExec struct {
	path      string
	argv, env []string
}

func prepareExec(path string, argv, env []string) (*preparedExec, error) {
	return &preparedExec{path: path, argv: argv, env: env}, nil
}

// exec replaces the process with the program; it returns only its error.
func (x *preparedExec) exec() syscall.Errno {
	return errnoOf(syscall.Exec(x.path, x.argv, x.env))
}

func setrlimitRaw(resource int, lim *syscall.Rlimit) syscall.Errno {
	return errnoOf(syscall.Setrlimit(resource, lim))
}

func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		errno = syscall.EINVAL
	}
	return errno
}
