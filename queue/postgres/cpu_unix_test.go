//go:build unix

package postgres_test

import (
	"syscall"
	"time"
)

// cpuNow is the CPU time the process has used, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
