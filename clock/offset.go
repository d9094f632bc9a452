package clock

import (
	"os"
	"strings"
	"sync"
	"time"
)

// OffsetFile is the wall clock shifted by a Go duration read from a file
// ("-2h"), re-read at most every 20ms. It lets black-box tests step a
// running binary's clock. Only a binary built with the schedulertest tag
// enables it, and logs so; a release build never uses it.
type OffsetFile struct {
	Path string

	mu     sync.Mutex
	readAt time.Time
	offset time.Duration
}

// Now returns the wall clock plus the file's offset. An unreadable or
// malformed file keeps the last offset.
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

// After returns time.After(d): the offset does not affect durations.
func (*OffsetFile) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Monotonic returns Real's: a change of offset is a step of the wall
// clock alone.
func (*OffsetFile) Monotonic() time.Duration { return Real{}.Monotonic() }
