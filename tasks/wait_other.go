//go:build unix && !linux

package tasks

import (
	"errors"
	"runtime"
	"syscall"
)

// waitExited reports that waiting for an exit without reaping is not
// available here; the caller reaps first and kills the group after.
func waitExited(int) error { return errors.ErrUnsupported }

// maxRSSBytes is ru's peak resident set in bytes: macOS counts ru_maxrss in
// bytes, the BSDs in KiB.
func maxRSSBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
