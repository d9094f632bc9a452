//go:build !unix

package postgres_test

import "time"

// cpuNow is not measured on this platform.
func cpuNow() time.Duration { return 0 }
