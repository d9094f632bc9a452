package tasks

import "syscall"

// maxRSSBytes is ru's peak resident set in bytes: Linux counts ru_maxrss
// in KiB.
func maxRSSBytes(ru *syscall.Rusage) int64 { return int64(ru.Maxrss) * 1024 }
