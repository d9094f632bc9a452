package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a Clock whose time moves only through Advance, Set or Step.
// Like a real clock it has a wall clock (Now) and a monotonic one:
// Advance moves both and fires the timers due; a step (Step, or Set
// backwards) moves the wall clock alone and fires no timer. It is safe
// for concurrent use.
type Fake struct {
	mu      sync.Mutex
	cond    *sync.Cond
	now     time.Time
	mono    time.Duration
	waiters []*waiter
}

type waiter struct {
	at time.Duration // on the monotonic clock
	ch chan time.Time
}

// NewFake returns a Fake clock set to now.
func NewFake(now time.Time) *Fake {
	f := &Fake{now: now}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Monotonic returns the time Advance and forward Sets added since NewFake.
func (f *Fake) Monotonic() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mono
}

// After returns a channel that receives the fake time once d has passed.
// A non-positive d fires at once.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, &waiter{at: f.mono + d, ch: ch})
	f.cond.Broadcast()
	return ch
}

// Advance moves both clocks forward by d and fires the timers due. A
// negative d is Step(d): time never runs back.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d < 0 {
		f.now = f.now.Add(d)
		return
	}
	f.advanceLocked(d)
}

// Set moves the wall clock to t. Forwards it is Advance(t - Now());
// backwards it is a Step.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.advanceLocked(t.Sub(f.now))
		return
	}
	f.now = t
}

// Step moves the wall clock by d, as setting the clock does: Now moves,
// Monotonic does not, and no timer fires or moves.
func (f *Fake) Step(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *Fake) advanceLocked(d time.Duration) {
	f.now = f.now.Add(d)
	f.mono += d
	sort.SliceStable(f.waiters, func(i, j int) bool { return f.waiters[i].at < f.waiters[j].at })
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.at <= f.mono {
			w.ch <- f.now
			continue
		}
		kept = append(kept, w)
	}
	for i := len(kept); i < len(f.waiters); i++ {
		f.waiters[i] = nil
	}
	f.waiters = kept
}

// Waiters returns how many timers are pending.
func (f *Fake) Waiters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

// BlockUntil returns once at least n timers are pending.
func (f *Fake) BlockUntil(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for len(f.waiters) < n {
		f.cond.Wait()
	}
}
