package daemon

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// liveness probes the daemon's loops. A loop that has not answered the
// previous look's probe is stuck. It is safe for concurrent use.
type liveness struct {
	mu     sync.Mutex
	probes map[string]func() <-chan struct{}
	asked  map[string]<-chan struct{}
}

// newLiveness returns the liveness of the named loops; each probe returns
// a channel the loop closes when it comes round.
func newLiveness(probes map[string]func() <-chan struct{}) *liveness {
	return &liveness{probes: probes, asked: map[string]<-chan struct{}{}}
}

// look returns the loops that missed the last probe, sorted, and probes anew.
func (l *liveness) look() (late []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, probe := range l.probes {
		if ch, ok := l.asked[name]; ok {
			select {
			case <-ch:
			default:
				late = append(late, name)
			}
		}
		l.asked[name] = probe()
	}
	slices.Sort(late)
	return late
}

// drop stops probing a loop that ended on purpose.
func (l *liveness) drop(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.probes, name)
	delete(l.asked, name)
}

// watchdog feeds systemd's watchdog every interval while every loop
// answers its probe and the database answers a read.
type watchdog struct {
	clock    clock.Clock
	interval time.Duration
	live     *liveness
	ping     func(context.Context) error
	feed     func()
	log      *slog.Logger
}

// run feeds the watchdog until ctx is done.
func (w *watchdog) run(ctx context.Context) {
	w.live.look()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.clock.After(w.interval):
		}
		late := w.live.look()
		pctx, cancel := context.WithTimeout(ctx, w.interval)
		perr := w.ping(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case len(late) > 0:
			w.log.ErrorContext(ctx, "watchdog not fed: a loop is stuck", "loops", late, "interval", w.interval)
		case perr != nil:
			w.log.ErrorContext(ctx, "watchdog not fed: the database does not answer", "err", perr)
		default:
			w.feed()
		}
	}
}
