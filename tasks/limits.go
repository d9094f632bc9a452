package tasks

import (
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scheduler-run/scheduler/queue"
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
