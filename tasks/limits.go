package tasks

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"scheduler/queue"
)

// Limits are the resource limits of a command: setrlimit(2) limits set in
// the command's own process just before it runs, so that they bind the
// program and what it starts (each process on its own: rlimits are per
// process and inherited) and never the daemon. Zero fields set nothing. No
// cgroup is created or written: a machine's cgroups belong to its own
// supervision (systemd), whose limits of the daemon's unit still hold
// around every command.
type Limits struct {
	// MemoryMax limits, in bytes, the private writable memory of each
	// process: RLIMIT_DATA, soft and hard. RLIMIT_DATA (Linux 4.7 and
	// later) counts the heap, whether grown by brk or mmap, and other
	// private writable mappings: the memory a program allocates. It is
	// chosen over RLIMIT_AS, which counts the whole address space: the
	// libraries mapped from files and the ranges that runtimes such as
	// Go's, the JVM or V8 reserve at start and may never use, so that a
	// program can fail under RLIMIT_AS at a fraction of the memory it
	// would really use. An allocation past the limit fails (ENOMEM); the
	// program then exits or aborts on its own. Like RLIMIT_AS it is not
	// resident memory: memory a program allocates and never touches counts.
	MemoryMax int64
	// CPUTimeMax limits the CPU time, user and system, of each process:
	// RLIMIT_CPU, whole seconds, rounded up. At it the process gets
	// SIGXCPU, which ends it unless caught; a second later, SIGKILL.
	CPUTimeMax time.Duration
	// OpenFilesMax limits the file descriptors each process may hold:
	// RLIMIT_NOFILE, soft and hard, so that a program cannot raise it. An
	// open past it fails with EMFILE.
	OpenFilesMax int
	// Retryable makes an attempt that exceeded MemoryMax or CPUTimeMax an
	// ordinary failed attempt. By default it fails the job permanently:
	// the same payload would exceed the same limit again.
	Retryable bool
}

// IsZero reports whether l sets no limit.
func (l Limits) IsZero() bool {
	return l.MemoryMax <= 0 && l.CPUTimeMax <= 0 && l.OpenFilesMax <= 0
}

// String lists the limits set, as a configuration writes them:
// "memory_max 512MiB, cpu_time_max 10m, open_files_max 64"; empty when none.
func (l Limits) String() string {
	var parts []string
	if l.MemoryMax > 0 {
		parts = append(parts, "memory_max "+FormatSize(l.MemoryMax))
	}
	if l.CPUTimeMax > 0 {
		parts = append(parts, "cpu_time_max "+queue.ShortDuration(l.CPUTimeMax))
	}
	if l.OpenFilesMax > 0 {
		parts = append(parts, "open_files_max "+strconv.Itoa(l.OpenFilesMax))
	}
	return strings.Join(parts, ", ")
}

// cpuSeconds is CPUTimeMax in RLIMIT_CPU's unit, rounded up.
func (l Limits) cpuSeconds() uint64 {
	return uint64((l.CPUTimeMax + time.Second - 1) / time.Second)
}

// FormatSize writes n bytes in the largest binary unit that divides it
// exactly: 512MiB, 3GiB, 1536KiB, 1000B.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n > 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// LauncherArg is the reserved first argument by which a binary is started
// as the launcher of a command with Limits (see ExecLimited). No command of
// the scheduler's own command line is spelt this way.
const LauncherArg = "__scheduler-exec-limited"

// LauncherFailed is the exit code main gives a launcher whose ExecLimited
// returned: the limits or the program could not be set up. The Command
// learns the reason through its status pipe, not from the code.
const LauncherFailed = 127

// launcherStatusFD is the descriptor of the launcher's status pipe: the
// first of exec.Cmd.ExtraFiles.
const launcherStatusFD = 3

// launcherReady is what the launcher writes to its status pipe first, so
// that a binary that is not a launcher (its main does not call
// ExecLimited) is told from a program that ran.
const launcherReady = "L"

// DefaultLauncher is the launcher a Command with Limits uses when its
// CommandConfig names none: the running binary itself. On Linux it is
// /proc/self/exe, which stays the running binary when its file is replaced
// by an upgrade.
func DefaultLauncher() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// ExecLimited runs the launcher of a command with Limits when args, a
// process's os.Args, are a launcher's: args[1] is LauncherArg. It sets the
// limits on its own process and replaces it with the program (execve(2),
// no shell), so that no Go code of the daemon runs under them and
// os/exec, which cannot set limits for a child alone, needs none. It returns
// false at once, doing nothing, for any other args. On success it does not
// return; when it returns true, the launcher failed and reported why on its
// status pipe, and main must exit with LauncherFailed.
//
// A binary that runs commands with Limits must call it first thing in main:
// cmd/scheduler does; a team's own binary built on the Registry must too.
func ExecLimited(args []string) bool {
	if len(args) < 2 || args[1] != LauncherArg {
		return false
	}
	status := os.NewFile(launcherStatusFD, "launcher status")
	fail := func(stage string, err error) bool {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EINVAL
		}
		fmt.Fprintf(status, "%s %d", stage, int(errno))
		return true
	}
	// The program must not inherit the pipe: its closing at execve tells
	// the Command that the program runs.
	syscall.CloseOnExec(launcherStatusFD)
	if _, err := status.WriteString(launcherReady); err != nil {
		return true
	}
	if len(args) < 5 {
		return fail("arguments", syscall.EINVAL)
	}
	spec, path, argv := args[2], args[3], args[4:]
	rlimits, err := parseRlimits(spec)
	if err != nil {
		return fail("arguments", err)
	}
	for _, r := range rlimits {
		var cur syscall.Rlimit
		if err := syscall.Getrlimit(r.resource, &cur); err != nil {
			return fail(r.name, err)
		}
		// A limit above the daemon's own hard limit cannot be raised to
		// without privilege: the lower one holds.
		want := syscall.Rlimit{Cur: min(r.soft, cur.Max), Max: min(r.hard, cur.Max)}
		if err := syscall.Setrlimit(r.resource, &want); err != nil {
			return fail(r.name, err)
		}
	}
	err = syscall.Exec(path, argv, os.Environ())
	return fail("exec", err)
}

// rlimit is one limit a launcher sets.
type rlimit struct {
	name       string
	resource   int
	soft, hard uint64
}

// rlimitSpec writes l for the launcher's command line:
// "data=536870912,cpu=600,nofile=64".
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
			// SIGXCPU at the soft limit lets the program end as it
			// chooses; SIGKILL a second later ends one that does not.
			out = append(out, rlimit{"RLIMIT_CPU", unix.RLIMIT_CPU, n, n + 1})
		case "nofile":
			out = append(out, rlimit{"RLIMIT_NOFILE", unix.RLIMIT_NOFILE, n, n})
		default:
			return nil, fmt.Errorf("limit %q: %w", part, syscall.EINVAL)
		}
	}
	return out, nil
}

// launcherCmd is the exec.Cmd that starts the launcher for program path
// with args (args[0] is the name the program sees) under l, and the read
// end of its status pipe. The caller closes the write end after Start.
func launcherCmd(launcher, path string, args []string, l Limits) (cmd *exec.Cmd, statusR, statusW *os.File, err error) {
	statusR, statusW, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("create launcher status pipe: %w", err)
	}
	cmd = &exec.Cmd{
		Path:       launcher,
		Args:       append([]string{launcher, LauncherArg, l.rlimitSpec(), path}, args...),
		ExtraFiles: []*os.File{statusW},
	}
	return cmd, statusR, statusW, nil
}

// launchError reads the launcher's status pipe to its end, which comes at
// the program's execve or the launcher's exit, and returns nil when the
// program runs, or why it does not.
func launchError(name, launcher string, statusR io.Reader, l Limits) error {
	b, err := io.ReadAll(statusR)
	if err != nil {
		return fmt.Errorf("start command %s: read launcher status: %w", name, err)
	}
	s, ready := strings.CutPrefix(string(b), launcherReady)
	if !ready {
		return queue.Permanent(fmt.Errorf("start command %s: %s did not launch it: a binary that runs commands with limits must call tasks.ExecLimited first in its main", name, launcher))
	}
	if s == "" {
		return nil
	}
	stage, num, _ := strings.Cut(s, " ")
	n, _ := strconv.Atoi(num)
	errno := syscall.Errno(n)
	if stage == "exec" && errno == syscall.ENOMEM && l.MemoryMax > 0 {
		// The program's image did not fit under memory_max.
		return limitError(l, fmt.Errorf("memory limit %s exceeded (start command %s: %w)", FormatSize(l.MemoryMax), name, errno))
	}
	if stage != "exec" {
		return queue.Permanent(fmt.Errorf("start command %s: set %s: %w", name, stage, errno))
	}
	return startError(name, errno)
}

// limitError classifies err, an attempt that exceeded a memory or CPU limit:
// permanent unless l.Retryable.
func limitError(l Limits, err error) error {
	if l.Retryable {
		return err
	}
	return queue.Permanent(err)
}

// memoryNearLimit is the share of MemoryMax, in quarters, that a failed
// command's peak resident memory must reach for the failure to be put down
// to the limit. The limit counts allocated memory and the peak counts
// touched memory: a runtime that maps its heap in large steps (Go's arenas
// are 64MiB) fails with part of its last step untouched.
const memoryNearLimit = 3

// overLimit says which limit a failed command exceeded, from its wait
// status and resource usage; empty when none can be told. A process killed
// by SIGXCPU, or by SIGKILL after at least CPUTimeMax of CPU time (the hard
// limit, a second after a SIGXCPU it caught or ignored), exceeded the CPU
// limit; one that caught SIGXCPU and exited is not told from other
// failures, nor is a CPU time that only the processes it waited for spent
// (their time is summed in its usage, their limits are their own). One
// whose peak resident memory reached three quarters of MemoryMax is taken
// to have failed an allocation at the limit: RLIMIT_DATA leaves no other
// trace, and an allocation larger than what is left of the limit, failing
// at a low peak, is not told from any other failure. Exceeding
// OpenFilesMax leaves no trace at all: the program sees EMFILE and reports
// it, or not, in its output.
// The detail, such as the peak, goes with the exit in parentheses.
func (l Limits) overLimit(ws syscall.WaitStatus, ru *syscall.Rusage) (reason, detail string) {
	var cpu time.Duration
	var peak int64
	if ru != nil {
		cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		peak = maxRSSBytes(ru)
	}
	switch {
	case l.CPUTimeMax > 0 && ws.Signaled() && (ws.Signal() == syscall.SIGXCPU ||
		ws.Signal() == syscall.SIGKILL && cpu >= time.Duration(l.cpuSeconds())*time.Second):
		return "cpu time limit " + queue.ShortDuration(l.CPUTimeMax) + " exceeded", ", cpu time " + cpu.Round(time.Millisecond).String()
	case l.MemoryMax > 0 && peak >= l.MemoryMax/4*memoryNearLimit:
		return "memory limit " + FormatSize(l.MemoryMax) + " exceeded", ", peak resident " + FormatSize(peak>>20<<20)
	}
	return "", ""
}
