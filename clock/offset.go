package clock

import (
	"os"
	"strings"
	"sync"
	"time"
)

// OffsetFile is the wall clock shifted by a duration read from a file (Go
// duration syntax, e.g. "-2h"), re-read at most every 20ms of real time. It
// exists only so that black-box tests can make a running binary's wall clock
// jump forwards and backwards. Only a binary built with the schedulertest
// build tag reads the environment variable that enables it (see
// cli/testclock.go), and says so loudly in its log; a release build never
// uses it.
type OffsetFile struct {
	Path string

	mu     sync.Mutex
	readAt time.Time
	offset time.Duration
}

// Now returns the wall clock plus the file's current offset. An unreadable
// or malformed file keeps the last offset.
func (o *OffsetFile) Now() time.Time {
	real := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if real.Sub(o.readAt) >= 20*time.Millisecond || o.readAt.IsZero() {
		o.readAt = real
		if b, err := os.ReadFile(o.Path); err == nil {
			if d, err := time.ParseDuration(strings.TrimSpace(string(b))); err == nil {
				o.offset = d
			}
		}
	}
	return real.Add(o.offset)
}

// After returns time.After(d): durations are not affected by the offset.
func (*OffsetFile) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Monotonic returns Real's: a change of the offset is a step of the wall
// clock alone, as a real one is, and moves no elapsed time.
func (*OffsetFile) Monotonic() time.Duration { return Real{}.Monotonic() }
