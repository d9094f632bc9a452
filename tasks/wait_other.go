//go:build unix && !linux

package tasks

import (
	"runtime"
	"syscall"
)

// maxRSSBytes is ru's peak resident set in bytes: macOS counts ru_maxrss in
// bytes, the BSDs in KiB.
func maxRSSBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
