package daemon

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule"
)

// healthEvery is how often the health check probes the loops. A loop that
// has not answered the previous look's probe is stuck, and /healthz
// answers 503. The loops answer whenever they wait, between passes.
const healthEvery = 10 * time.Second

// writes is the outcome of the daemon's last write, which each pool and
// beat transaction reports (WroteFunc). A database that reads but takes no
// write (read-only, full) fails each. It is safe for concurrent use.
type writes struct {
	mu  sync.Mutex
	err error // of the last write: nil when it committed
}

// record is a WroteFunc: err is nil when the write committed.
func (w *writes) record(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// failed returns the error of the last write, nil when it committed.
func (w *writes) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// health is what /healthz answers: stuck loops, a failed last write, or a
// stop. It is safe for concurrent use.
type health struct {
	clock  clock.Clock
	live   *liveness
	writes *writes
	// agreement, when set, gives the live daemons' configs as the beat
	// last read them. A disagreement is a note in a 200, not a failure: a
	// restart would make the restarted daemon's config the newest, handing
	// the schedules to whichever file it loads.
	agreement func() (schedule.Agreement, bool)

	mu       sync.Mutex
	late     []string
	stopping bool
}

// newHealth returns the health of live's loops and w's writes.
func newHealth(c clock.Clock, live *liveness, w *writes) *health {
	return &health{clock: c, live: live, writes: w}
}

// run looks at the loops every healthEvery until ctx is done.
func (h *health) run(ctx context.Context) {
	h.live.look()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.clock.After(healthEvery):
		}
		late := h.live.look()
		h.mu.Lock()
		h.late = late
		h.mu.Unlock()
	}
}

// stop makes /healthz answer 503 from now on: the daemon is stopping.
func (h *health) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopping = true
}

// ServeHTTP answers /healthz: 200 "ok", with a note when the live daemons
// run different configs, or 503 with why.
func (h *health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	late, stopping := h.late, h.stopping
	h.mu.Unlock()
	werr := h.writes.failed()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case stopping:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, "stopping")
	case len(late) > 0:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "stuck: %s did not answer within %s\n", strings.Join(late, ", "), healthEvery)
	case werr != nil:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "database not writable: the last write failed: %v\n", werr)
	default:
		fmt.Fprintln(w, "ok")
		if h.agreement == nil {
			return
		}
		if a, ok := h.agreement(); ok && !a.Agreed() {
			fmt.Fprintln(w, configsWarning(a))
		}
	}
}

// configsWarning says that the live daemons' configs differ, which rules,
// and what this daemon's beat does.
func configsWarning(a schedule.Agreement) string {
	part := "this daemon's beat sits out: its config is not the newest"
	if a.SelfRules {
		part = "this daemon's beat materialises: its config is the newest"
	}
	return fmt.Sprintf("configs differ: the live daemons run %d different configs; only the daemons of the newest one (sha256 %s) materialise instants; %s: %s",
		a.Configs, shortSHA(a.Ruling), part, a)
}

// shortSHA is a SHA-256's first 12 hex digits.
func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
