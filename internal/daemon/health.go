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

// healthEvery is how often the health check probes the beat and the pool's
// loop: a loop that has not answered the probe of the previous look,
// healthEvery ago, is stuck, and /healthz answers 503. Both loops answer a
// probe whenever they wait, which they do at least every 30s when idle and
// between every pass or trip when busy.
const healthEvery = 10 * time.Second

// writes is the outcome of the daemon's last write to the database: each
// write transaction of its pools and of the beat reports to it (their
// WroteFunc). A database that opens and answers reads but takes no write
// (a read-only mount, an immutable file, a read-only PostgreSQL session, a
// full disk) fails each one. It is safe for concurrent use.
type writes struct {
	mu  sync.Mutex
	err error // of the last write: nil when it committed
}

// record is a WroteFunc: err is the outcome of a write, nil when it
// committed.
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

// health is what /healthz answers: the loops found stuck at the last look,
// the last write to the database failed, or the daemon is stopping. It is
// safe for concurrent use.
type health struct {
	clock  clock.Clock
	live   *liveness
	writes *writes
	// agreement, when set, gives what the live daemons run as the beat
	// last read it (schedule.Beat.Agreement): a disagreement is reported
	// in the body of a 200, not as a failure. A health check that fails
	// gets a daemon restarted, and a restart makes its config the newest,
	// which then rules (see schedule.Agreement): the restart would hand
	// the schedules to whichever file it loads.
	agreement func() (schedule.Agreement, bool)

	mu       sync.Mutex
	late     []string
	stopping bool
}

// newHealth returns the health of the loops that live probes and of the
// writes that w records; c times its looks.
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

// configsWarning says that the live daemons run different configs, which
// rules, and what this daemon's beat does about it.
func configsWarning(a schedule.Agreement) string {
	part := "this daemon's beat sits out: its config is not the newest"
	if a.SelfRules {
		part = "this daemon's beat materialises: its config is the newest"
	}
	return fmt.Sprintf("configs differ: the live daemons run %d different configs; only the daemons of the newest one (sha256 %s) materialise instants; %s: %s",
		a.Configs, shortSHA(a.Ruling), part, a)
}

// shortSHA is a SHA-256 as messages show it: its first 12 hex digits.
func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
