package clock

import (
	"sync"
	"time"
)

// StepMin is the smallest step that Steps reports. Smaller differences
// are the noise of reading two clocks, or a slewing clock's correction.
const StepMin = 100 * time.Millisecond

// Steps notices steps of a clock's wall clock: Now moving by more or less
// than Monotonic between two readings. A slewed clock (NTP, PostgreSQL's)
// shows no step; a clock being set does. The zero value is ready for use
// and safe for concurrent use.
type Steps struct {
	mu   sync.Mutex
	skew int64 // wall minus monotonic at the last reading, in nanoseconds
	read bool
}

// Read returns c's time and how far its wall clock stepped since the
// last Read: negative backwards, zero below StepMin and at the first
// Read. Steps between two Reads add up; one undone counts as none.
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
