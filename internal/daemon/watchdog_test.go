package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// fakeLoop answers probes at once while alive; a wedged one answers them
// only once it is unwedged.
type fakeLoop struct {
	mu      sync.Mutex
	wedged  bool
	pending []chan struct{}
}

func (f *fakeLoop) probe() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	if f.wedged {
		f.pending = append(f.pending, ch)
	} else {
		close(ch)
	}
	return ch
}

func (f *fakeLoop) wedge(w bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wedged = w
	if !w {
		for _, ch := range f.pending {
			close(ch)
		}
		f.pending = nil
	}
}

// TestWatchdogNeedsEveryLoop: WATCHDOG=1 is sent only for an interval in
// which the pool and the beat both answered and the database did; a
// wedged loop stops it until it comes round again.
func TestWatchdogNeedsEveryLoop(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	pool, beat := &fakeLoop{}, &fakeLoop{}
	var pingErr atomic.Pointer[error]
	var fed atomic.Int32
	w := &watchdog{
		clock: clk, interval: 10 * time.Second,
		live: newLiveness(map[string]func() <-chan struct{}{"pool": pool.probe, "beat": beat.probe}),
		ping: func(context.Context) error {
			if e := pingErr.Load(); e != nil {
				return *e
			}
			return nil
		},
		feed: func() { fed.Add(1) },
		log:  slog.New(slog.DiscardHandler),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.run(ctx) }()
	defer func() { cancel(); <-done }()
	// tick moves to the next tick and waits until the watchdog has handled
	// it (it then waits for the one after), returning whether it fed.
	tick := func() bool {
		t.Helper()
		clk.BlockUntil(1)
		before := fed.Load()
		clk.Advance(w.interval)
		clk.BlockUntil(1)
		return fed.Load() > before
	}
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"all alive", func() {}, true},
		{"pool wedged after its probe was answered", func() { pool.wedge(true) }, true},
		{"pool wedged a whole interval", func() {}, false},
		{"pool still wedged", func() {}, false},
		{"pool came round", func() { pool.wedge(false) }, true},
		{"beat wedged after its probe was answered", func() { beat.wedge(true) }, true},
		{"beat wedged a whole interval", func() {}, false},
		{"beat came round", func() { beat.wedge(false) }, true},
		{"database fails", func() { e := errors.New("disk I/O error"); pingErr.Store(&e) }, false},
		{"database back", func() { pingErr.Store(nil) }, true},
	}
	for _, s := range steps {
		s.do()
		if got := tick(); got != s.want {
			t.Errorf("%s: fed = %v, want %v", s.name, got, s.want)
		}
	}
}
