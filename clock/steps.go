package clock

import (
	"sync"
	"time"
)

// StepMin is the smallest step that Steps reports. Below it a difference
// is the noise of reading two clocks one after the other, or the
// correction of a clock that follows another (see Steps).
const StepMin = 100 * time.Millisecond

// Steps notices the steps of a clock's wall clock: between two readings,
// Now moved by more or less than Monotonic. A clock slewed to follow
// another (NTP, the server's on PostgreSQL) moves both alike and shows no
// step; one set by an operator or a time daemon moves Now alone. The zero
// value is ready for use; it is safe for concurrent use.
type Steps struct {
	mu   sync.Mutex
	skew int64 // wall minus monotonic at the last reading, in nanoseconds
	read bool
}

// Read returns c's time and how far its wall clock stepped since the last
// Read: positive forwards, negative backwards, zero when it did not by
// StepMin or more, and at the first Read. Steps both ways between two
// Reads add up: a step undone before the next Read is none.
func (s *Steps) Read(c Clock) (time.Time, time.Duration) {
	now := c.Now()
	skew := now.UnixNano() - int64(c.Monotonic())
	s.mu.Lock()
	defer s.mu.Unlock()
	d := time.Duration(skew - s.skew)
	first := !s.read
	s.skew, s.read = skew, true
	if first || (d < StepMin && d > -StepMin) {
		return now, 0
	}
	return now, d
}
