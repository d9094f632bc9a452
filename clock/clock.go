// Package clock is the one place that reads the wall clock and creates
// timers. Production code takes a Clock so that tests can move time with
// Fake instead of waiting for it.
package clock

import "time"

// Clock tells the time and makes timers. Implementations are safe for
// concurrent use.
type Clock interface {
	// Now returns the wall clock's instant, which a step of the clock
	// moves.
	Now() time.Time
	// After returns a channel that receives the time once d has elapsed.
	// A step of the wall clock neither hastens nor delays it.
	After(d time.Duration) <-chan time.Time
	// Monotonic returns the time since the clock's own origin, by a
	// clock that never steps. Take durations that matter (a period, a
	// measurement) from it, never from two readings of Now.
	Monotonic() time.Duration
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Monotonic returns the process's monotonic time since the package was
// initialised.
func (Real) Monotonic() time.Duration { return time.Since(origin) }

// origin carries a monotonic reading, so time.Since uses that clock.
var origin = time.Now()
