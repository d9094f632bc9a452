//go:build !unix

package main

import "time"

// cpuTime is not measured on this platform; cpu_s is then -1.
func cpuTime() time.Duration { return -1 }
