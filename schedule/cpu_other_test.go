//go:build !linux

package schedule

import "time"

// cpuNow is zero where the process's CPU time is not read.
func cpuNow() time.Duration { return 0 }

// ioNow is zero where the process's I/O is not read.
func ioNow() (read, written int64) { return 0, 0 }
