package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/api"
	"github.com/scheduler-run/scheduler/internal/dashboard"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
	"go.opentelemetry.io/otel/trace"
)

// The HTTP server's limits bound how long a slow client holds a connection.
const (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 10 * time.Second
	httpWriteTimeout      = 30 * time.Second // a scrape reads the database within scrapeTimeout
	httpIdleTimeout       = 2 * time.Minute
	httpMaxHeaderBytes    = 16 << 10
	httpShutdownWait      = 5 * time.Second
)

// newSite returns the dashboard served at "/": the pages behind h's login,
// and the actions when h enables them, all fed by beat.
func newSite(q *queue.Client, h config.HTTPSettings, beat *schedule.Beat, tp trace.TracerProvider, clk clock.Clock, log *slog.Logger) (http.Handler, error) {
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
		if actions, err = dashboard.NewActions(dashboard.ActionsConfig{Queue: q, ConfigFunc: cfg, TracerProvider: tp, Logger: log}); err != nil {
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

// listenHTTP listens on addr and returns the server, not yet serving
// /metrics, /healthz, /api/ to apis and, unless dash is nil, every other
// path to dash.
func listenHTTP(addr string, m *metrics, h *health, apis, dash http.Handler, log *slog.Logger) (*httpServer, error) {
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
	mux.Handle("/api/", apis)
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

// shutdown lets requests finish briefly, closes, and returns once serve has.
func (s *httpServer) shutdown(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownWait)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	<-s.done
}

// buildHTTP makes the metrics, health check and server, not yet serving.
func (d *Daemon) buildHTTP(clk clock.Clock) error {
	d.met = newMetrics(d.q, d.running, d.cfg.Version, d.pools.gauges(), d.writes, d.log)
	d.met.DeadlineFunc = d.beat.Deadline
	d.met.AgreementFunc = d.beat.Agreement
	d.health = newHealth(d.cfg.Clock, newLiveness(d.probes()), d.writes)
	d.health.agreement = d.beat.Agreement
	var site http.Handler
	if d.running.HTTP.Dashboard {
		h := d.running.HTTP
		h.Listen = d.listen // a host name the dashboard answers to
		var err error
		if site, err = newSite(d.q, h, d.beat, d.tracerProvider(), clk, d.log); err != nil {
			return err
		}
	}
	h := d.running.HTTP
	h.Listen = d.listen
	apis, err := api.New(api.Config{Queue: d.q, ConfigFunc: d.beat.Config, HTTP: h, TracerProvider: d.tracerProvider(), Logger: d.log})
	if err != nil {
		return err
	}
	srv, err := listenHTTP(d.listen, d.met, d.health, apis, site, d.log)
	if err != nil {
		return err
	}
	d.srv, d.site = srv, site != nil
	if public, _ := config.CheckListen(d.listen); public {
		what := "the metrics"
		if d.site {
			what = "the metrics, and sees the dashboard's login page"
		}
		d.log.Warn("http listens beyond the loopback interface: anyone who reaches it reads "+what, "listen", d.listen)
	}
	return nil
}

// serveHTTP runs the server and health check; stop returns once both have.
func (d *Daemon) serveHTTP(ctx context.Context) (stop func()) {
	healthCtx, stopHealth := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { d.health.run(healthCtx) })
	wg.Go(d.srv.serve)
	paths := "/metrics /healthz " + api.Prefix
	if d.site {
		paths += " / (the dashboard)"
	}
	h := d.running.HTTP
	d.log.Info("http listening", "listen", d.srv.Addr().String(), "paths", paths,
		"dashboard_login", d.site && h.Credentials(), "dashboard_actions", d.site && h.Actions,
		"api_tokens", len(d.beat.Config().API.Tokens))
	return func() {
		d.srv.shutdown(ctx)
		stopHealth()
		wg.Wait()
	}
}
