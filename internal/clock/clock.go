// Package clock is the one place that reads the wall clock and creates timers.
// Production code takes a Clock so that tests can move time with Fake instead of
// waiting for it.
package clock

import (
	"os"
	"strings"
	"sync"
	"time"
)

// Clock tells the time and makes timers. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now returns the current instant.
	Now() time.Time
	// After returns a channel that receives the time once d has elapsed.
	After(d time.Duration) <-chan time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// OffsetFile is the wall clock shifted by a duration read from a file (Go
// duration syntax, e.g. "-2h"), re-read at most every 20ms of real time. It
// exists only so that black-box tests can make a running binary's wall clock
// jump forwards and backwards; the program enables it from an environment
// variable and says so loudly in its log.
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
