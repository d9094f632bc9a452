package tasks

import (
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// Limits are a command's setrlimit(2) limits, set in its own process
// before the program runs: they bind each process of the command, which
// inherit them, and never the daemon. Zero fields set nothing. No cgroup
// is created or written: cgroups belong to the machine's supervision.
type Limits struct {
	// MemoryMax limits each process's private writable memory, in bytes:
	// RLIMIT_DATA, soft and hard, which counts what a program allocates.
	// RLIMIT_AS would also count mapped libraries and the ranges runtimes
	// (Go, the JVM, V8) reserve unused. An allocation past it fails with
	// ENOMEM. Allocated but untouched memory counts.
	MemoryMax int64
	// CPUTimeMax limits each process's CPU time: RLIMIT_CPU, whole seconds
	// rounded up. SIGXCPU comes at it, SIGKILL a second later.
	CPUTimeMax time.Duration
	// OpenFilesMax limits each process's file descriptors: RLIMIT_NOFILE,
	// soft and hard, so a program cannot raise it.
	OpenFilesMax int
	// Retryable retries an attempt over MemoryMax or CPUTimeMax. By
	// default it is permanent: the same payload would exceed it again.
	Retryable bool
}

// IsZero reports whether l sets no limit.
func (l Limits) IsZero() bool {
	return l.MemoryMax <= 0 && l.CPUTimeMax <= 0 && l.OpenFilesMax <= 0
}

// String lists the limits set as a config writes them: "memory_max
// 512MiB, cpu_time_max 10m, open_files_max 64".
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

// FormatSize writes n bytes in the largest binary unit dividing it: 512MiB,
// 1536KiB, 1000B.
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

// limitError makes err, a limit exceeded, permanent unless l.Retryable.
func limitError(l Limits, err error) error {
	if l.Retryable {
		return err
	}
	return queue.Permanent(err)
}

// memoryNearLimit is the share of MemoryMax, in quarters, a failed
// command's peak resident memory must reach to blame the limit. The peak
// counts touched memory only: a runtime that maps its heap in large steps
// fails with part of the last untouched.
const memoryNearLimit = 3

// overLimit says which limit a failed command exceeded, from its wait
// status and usage, with a detail such as the peak; empty when unknown.
// Killed by SIGXCPU, or by SIGKILL after CPUTimeMax of CPU time, is the
// CPU limit. A peak resident memory of three quarters of MemoryMax is the
// memory limit, as RLIMIT_DATA leaves no other trace; a large allocation
// failing at a low peak is missed. OpenFilesMax leaves no trace at all.
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
