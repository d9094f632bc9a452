package tasks

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the child pid has exited without reaping it, so
// that its process group ID stays reserved until the caller has killed the
// rest of the group and called Wait.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// maxRSSBytes is ru's peak resident set in bytes: Linux counts ru_maxrss
// in KiB.
func maxRSSBytes(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) * 1024 }
