package tasks

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// program is the supervisor's child that runs the command's program.
type program struct {
	pid int
}

// exited reports whether the program has exited, without reaping it, so
// its group ID stays reserved until the group is killed.
func (p *program) exited() bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil: // ECHILD: nothing left to wait for
			return true
		}
		// Linux clears the siginfo when no child has exited.
		return info.Signo != 0
	}
}

// reap waits for the program and returns its wait status and resource
// usage, which counts descendants it waited for.
func (p *program) reap() (syscall.WaitStatus, syscall.Rusage) {
	var ws syscall.WaitStatus
	var ru syscall.Rusage
	for {
		_, err := syscall.Wait4(p.pid, &ws, 0, &ru)
		if !errors.Is(err, syscall.EINTR) {
			return ws, ru
		}
	}
}

// becomeSubreaper makes the caller, not init, the parent of every orphan
// below it, so it finds and reaps one that called setsid.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// signalDescendants signals every live descendant in /proc outside
// process group skip and returns how many. Linux hands pids out in turn
// up to pid_max, so a pid just read still names the same process.
func signalDescendants(sig syscall.Signal, skip int) int {
	procs := readProcs()
	children := make(map[int][]procStat, len(procs))
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	n := 0
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, p := range children[parent] {
			queue = append(queue, p.pid)
			if p.pgrp != skip && syscall.Kill(p.pid, sig) == nil {
				n++
			}
		}
	}
	return n
}

type procStat struct {
	pid, ppid, pgrp int
}

// readProcs lists the live processes (not zombies) in /proc.
func readProcs() []procStat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	out := make([]procStat, 0, len(names))
	buf := make([]byte, 1024)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if p, ok := readStat(pid, "/proc/"+name+"/stat", buf); ok {
			out = append(out, p)
		}
	}
	return out
}

// readStat reads /proc/PID/stat: "PID (COMM) STATE PPID PGRP ...", COMM
// possibly holding spaces and parentheses.
func readStat(pid int, path string, buf []byte) (procStat, bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	n, err := syscall.Read(fd, buf)
	syscall.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	s := buf[:n]
	i := bytes.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(s[i+1:])
	if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, ppid: ppid, pgrp: pgrp}, true
}

// preparedExec is an execve(2) built in advance, so running it allocates
// nothing.
type preparedExec struct {
	path      *byte
	argv, env []*byte
}

func prepareExec(path string, argv, env []string) (*preparedExec, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return nil, err
	}
	a, err := syscall.SlicePtrFromStrings(argv)
	if err != nil {
		return nil, err
	}
	e, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return nil, err
	}
	return &preparedExec{path: p, argv: a, env: e}, nil
}

// exec replaces the process with the program; it returns only its error.
func (x *preparedExec) exec() syscall.Errno {
	_, _, errno := syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(x.path)),
		uintptr(unsafe.Pointer(&x.argv[0])), uintptr(unsafe.Pointer(&x.env[0])))
	return errno
}

// setrlimitRaw sets a limit of the calling process without entering the
// runtime's system call path, which may start a thread.
func setrlimitRaw(resource int, lim *syscall.Rlimit) syscall.Errno {
	_, _, errno := syscall.RawSyscall6(unix.SYS_PRLIMIT64, 0, uintptr(resource), uintptr(unsafe.Pointer(lim)), 0, 0, 0)
	return errno
}
