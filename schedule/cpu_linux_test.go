//go:build linux

package schedule

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// cpuNow is the CPU time the process has used, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ioNow is the bytes the process has read and written through system calls
// (rchar and wchar of /proc/self/io), whether the kernel's page cache or the
// disk served them.
func ioNow() (read, written int64) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, 0
	}
	for line := range bytes.Lines(b) {
		k, v, _ := bytes.Cut(bytes.TrimSpace(line), []byte(": "))
		n, _ := strconv.ParseInt(string(v), 10, 64)
		switch string(k) {
		case "rchar":
			read = n
		case "wchar":
			written = n
		}
	}
	return read, written
}
