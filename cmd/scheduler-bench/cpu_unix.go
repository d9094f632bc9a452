//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime returns the user+system CPU time this process has consumed, or -1
// if it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
