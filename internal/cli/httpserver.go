package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/dashboard"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
)

// The HTTP server's limits: a client that sends its request slowly, or reads
// the answer slowly, holds a connection no longer than these.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 30 * time.Second // a scrape reads the database within scrapeTimeout
	httpIdleTimeout       = 2 * time.Minute
	httpMaxHeaderBytes    = 16 << 10
	httpShutdownWait      = 5 * time.Second
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

// newSite returns the dashboard as the daemon serves it at "/": the pages
// behind the login of h's credentials, and the actions when h enables them.
// The pages show the config, the deadlines and the agreement of the
// daemons' configs as beat has them.
func newSite(q *queue.Client, h schedule.HTTP, beat *schedule.Beat, clk clock.Clock, log *slog.Logger) (http.Handler, error) {
	auth, err := dashboard.NewAuth(dashboard.AuthConfig{HTTP: h, Clock: clk, Logger: log})
	if err != nil {
		return nil, err
	}
	cfg := beat.Config
	pages, err := dashboard.New(dashboard.Config{Queue: q, ConfigFunc: cfg, DeadlineFunc: beat.Deadline, SessionFunc: auth.Session,
		AgreementFunc: beat.Agreement, Clock: clk, Logger: log})
	if err != nil {
		return nil, err
	}
	var actions *dashboard.Actions
	if h.Actions && h.Credentials() {
		if actions, err = dashboard.NewActions(dashboard.ActionsConfig{Queue: q, ConfigFunc: cfg, Logger: log}); err != nil {
			return nil, err
		}
	}
	return auth.Handler(pages, actions), nil
}

// httpServer serves /metrics, /healthz and the dashboard on one listener.
type httpServer struct {
	srv  *http.Server
	ln   net.Listener
	log  *slog.Logger
	done chan struct{}
}

// listenHTTP listens on addr and returns the server, not yet serving: the
// metrics at /metrics, the health at /healthz and every other path to dash
// (the dashboard), unless dash is nil.
func listenHTTP(addr string, m *metrics, h *health, dash http.Handler, log *slog.Logger) (*httpServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelError),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Timeout:             scrapeTimeout + 5*time.Second,
	}))
	mux.Handle("GET /healthz", h)
	if dash != nil {
		mux.Handle("/", dash)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		MaxHeaderBytes:    httpMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return &httpServer{srv: srv, ln: ln, log: log, done: make(chan struct{})}, nil
}

// Addr is the address the server listens on.
func (s *httpServer) Addr() net.Addr { return s.ln.Addr() }

// serve serves until shutdown; run it on a goroutine of its own.
func (s *httpServer) serve() {
	defer close(s.done)
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.log.Error("http server failed", "err", err)
	}
}

// shutdown stops accepting, lets requests in progress finish for a short
// while, then closes, and returns once serve has.
func (s *httpServer) shutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownWait)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	<-s.done
}
