package store

import (
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// Leases judges leases by a store's clock across its wall-clock steps. A
// lease is stored as its end, by the clock then. After a forward step of D,
// older leases look D shorter and would be taken from live owners, who
// heartbeat by elapsed time; so until every older lease has ended by the old
// clock, a lease expires D past its end. A backward step makes leases look
// longer: taken late, never early. A store opened after a step cannot see it.
// Leases is safe for concurrent use.
type Leases struct {
	clock clock.Clock

	mu    sync.Mutex
	steps clock.Steps
	owed  time.Duration // forward steps read, not yet held (latest failed)
	held  time.Duration // forward steps held
	until time.Time     // the latest lease written before them
}

// NewLeases returns a Leases on c, reading it once so a later step shows.
func NewLeases(c clock.Clock) *Leases {
	l := &Leases{clock: c}
	l.steps.Read(c)
	return l
}

// Margin returns how far past its end a lease must be at now to count as
// expired: zero, or the forward steps held. latest returns the latest running
// lease's end (zero for none); Margin calls it only after a forward step, and
// fails with it.
func (l *Leases) Margin(now time.Time, latest func() (time.Time, error)) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, step := l.steps.Read(l.clock); step > 0 || l.owed > 0 {
		l.owed += max(step, 0)
		until, err := latest()
		if err != nil {
			return 0, err
		}
		if !until.IsZero() {
			l.held += l.owed
			if until.After(l.until) {
				l.until = until
			}
		}
		l.owed = 0
	}
	if l.held > 0 && now.Add(-l.held).After(l.until) {
		l.held, l.until = 0, time.Time{}
	}
	return l.held, nil
}
