package tasks

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/queue"
)

// launcherFailed is the exit code of a launcher that failed; the reason
// goes through its status pipe.
const launcherFailed = 127

// launcherStatusFD is the launcher's status pipe, after the standard
// streams.
const launcherStatusFD = 3

// launcherReady is the launcher's first status, which tells a binary that
// is not a launcher from a program that ran.
const launcherReady = "L"

// DefaultLauncher returns the running binary, the default supervisor: on
// Linux /proc/self/exe, which an upgrade replacing the file leaves as is.
func DefaultLauncher() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// launch is the launcher of a command with Limits: args are [argv0,
// launcherArg, LIMITS, PATH, ARGV...]. It sets the limits on itself and
// execs the program, so no daemon or supervisor code runs under them. It
// returns only on failure, reported on its status pipe.
func launch(args []string) int {
	status := os.NewFile(launcherStatusFD, "launcher status")
	fail := func(stage string, err error) int {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		fmt.Fprintf(status, "%s %d", stage, int(errno))
		return launcherFailed
	}
	// The pipe's closing at execve tells the supervisor the program runs.
	syscall.CloseOnExec(launcherStatusFD)
	if _, err := status.WriteString(launcherReady); err != nil {
		return launcherFailed
	}
	if len(args) < 5 {
		return fail("arguments", syscall.EINVAL)
	}
	rlimits, err := parseRlimits(args[2])
	if err != nil {
		return fail("arguments", err)
	}
	x, err := prepareExec(args[3], args[4:], os.Environ())
	if err != nil {
		return fail("exec", err)
	}
	want := make([]syscall.Rlimit, len(rlimits))
	for i, r := range rlimits {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(r.resource, &cur); err != nil {
			return fail(r.name, err)
		}
		// Raising past the daemon's hard limit needs privilege.
		want[i] = syscall.Rlimit{Cur: min(r.soft, cur.Max), Max: min(r.hard, cur.Max)}
	}
	// The Go runtime raised its soft open-files limit at start.
	// syscall.Exec restores the original even when its execve fails, as
	// this one does, so the program starts with the daemon's limit.
	_ = syscall.Exec("", nil, nil)

	// From the first limit to the execve nothing may allocate or collect:
	// the runtime may already map more than the memory limit.
	debug.SetGCPercent(-1)
	for i, r := range rlimits {
		if errno := setrlimitRaw(r.resource, &want[i]); errno != 0 {
			return failRaw(r.name, errno)
		}
	}
	return failRaw("exec", x.exec())
}

// failRaw is launch's fail without allocating.
func failRaw(stage string, errno syscall.Errno) int {
	var b [64]byte
	n := copy(b[:len(b)-21], stage)
	b[n] = ' '
	n++
	var d [20]byte
	i := len(d)
	for v := uint64(errno); i == len(d) || v > 0; v /= 10 {
		i--
		d[i] = byte('0' + v%10)
	}
	n += copy(b[n:], d[i:])
	_, _ = syscall.Write(launcherStatusFD, b[:n])
	return launcherFailed
}

type rlimit struct {
	name       string
	resource   int
	soft, hard uint64
}

// rlimitSpec writes l for the command lines:
// "data=536870912,cpu=600,nofile=64"; empty when l sets none.
func (l Limits) rlimitSpec() string {
	var parts []string
	if l.MemoryMax > 0 {
		parts = append(parts, "data="+strconv.FormatInt(l.MemoryMax, 10))
	}
	if l.CPUTimeMax > 0 {
		parts = append(parts, "cpu="+strconv.FormatUint(l.cpuSeconds(), 10))
	}
	if l.OpenFilesMax > 0 {
		parts = append(parts, "nofile="+strconv.Itoa(l.OpenFilesMax))
	}
	return strings.Join(parts, ",")
}

// parseRlimits reads rlimitSpec's text.
func parseRlimits(spec string) ([]rlimit, error) {
	var out []rlimit
	for part := range strings.SplitSeq(spec, ",") {
		name, val, ok := strings.Cut(part, "=")
		n, err := strconv.ParseUint(val, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("limit %q: %w", part, syscall.EINVAL)
		}
		switch name {
		case "data":
			out = append(out, rlimit{"RLIMIT_DATA", unix.RLIMIT_DATA, n, n})
		case "cpu":
			// SIGXCPU at the soft limit lets the program end itself;
			// SIGKILL a second later ends one that does not.
			out = append(out, rlimit{"RLIMIT_CPU", unix.RLIMIT_CPU, n, n + 1})
		case "nofile":
			out = append(out, rlimit{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, n, n})
		default:
			return nil, fmt.Errorf("limit %q: %w", part, syscall.EINVAL)
		}
	}
	return out, nil
}

// startFailure is the error of a supervisor's failure to start the
// program at stage.
func startFailure(name string, stage string, errno syscall.Errno, l Limits) error {
	switch {
	case stage == "exec" && errno == syscall.ENOMEM && l.MemoryMax > 0:
		// The program's image did not fit under memory_max.
		return limitError(l, fmt.Errorf("memory limit %s exceeded (start command %s: %w)", FormatSize(l.MemoryMax), name, errno))
	case stage == "exec" || stage == "launch":
		return startError(name, errno)
	}
	return queue.Permanent(fmt.Errorf("start command %s: set %s: %w", name, stage, errno))
}
