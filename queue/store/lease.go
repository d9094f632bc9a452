package store

import (
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// Leases judges leases by a store's clock, across steps of its wall
// clock. A lease is a duration written as the instant it ends, by the
// clock as it stood then. After the clock steps forward by D, every lease
// written before looks D shorter than it is: a store that compared it
// with its clock alone would take it from a live owner, who heartbeats in
// time by elapsed time. So from the first reading that shows the step
// until every lease written before it has ended by the clock as it stood
// before, a lease counts as expired only once it is D past its end: live
// owners renew theirs meanwhile, by the clock as it stands. A backward
// step makes leases look longer: they are taken back late, never early,
// and nothing is held for it.
//
// A store opened after the step has no earlier reading to compare with:
// it judges leases by its clock alone. Leases is safe for concurrent use.
type Leases struct {
	clock clock.Clock

	mu    sync.Mutex
	steps clock.Steps
	owed  time.Duration // forward steps read but not yet held (latest failed)
	held  time.Duration // forward steps held
	until time.Time     // the latest lease written before them
}

// NewLeases returns a Leases on c, reading it once: a later step shows.
func NewLeases(c clock.Clock) *Leases {
	l := &Leases{clock: c}
	l.steps.Read(c)
	return l
}

// Margin returns by how much, at now, a lease must be past its end to count
// as expired: zero, or the forward steps of the clock held (see Leases).
// A store takes back the leases that end before now minus Margin, and
// expects the next one to expire Margin after its end. latest returns the
// latest end of a running job's lease (zero for none); Margin calls it only
// after the clock stepped forward, and fails with it.
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
