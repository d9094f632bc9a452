package api

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/scheduler-run/scheduler/internal/dashboard"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
	"go.opentelemetry.io/otel/trace"
)

// Prefix is the path under which the API is served.
const Prefix = "/api/v1"

// Document is the OpenAPI 3.1 document of the API.
//
//go:embed openapi.json
var Document []byte

// Config configures an API. Queue and ConfigFunc are required.
type Config struct {
	// Queue is the database the API reads and writes.
	Queue *queue.Client
	// ConfigFunc returns the config the daemon runs now: its schedules and
	// its [api] tokens, so that a reload adds or revokes a token.
	ConfigFunc func() *config.Config
	// HTTP holds the host names, the listen address and the trusted
	// proxies that the dashboard's Host check and client address follow.
	HTTP config.HTTPSettings
	// TracerProvider, when set, makes each trigger a span that parents its
	// jobs' attempts. Default: none.
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger // Default: discard.
}

// API serves /api/v1. It is safe for concurrent use.
type API struct {
	cfg     Config
	log     *slog.Logger
	clients dashboard.Clients
	mux     *http.ServeMux
}

// New returns the API of cfg.
func New(cfg Config) (*API, error) {
	if cfg.Queue == nil {
		return nil, errors.New("api: no queue")
	}
	if cfg.ConfigFunc == nil {
		return nil, errors.New("api: no ConfigFunc")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &API{cfg: cfg, log: cfg.Logger.With("component", "api"), clients: dashboard.NewClients(cfg.HTTP), mux: http.NewServeMux()}
	a.routes()
	return a, nil
}

// caller is who makes a request: its token and address.
type caller struct {
	token config.APIToken
	addr  string
}

// by names the caller in a job's or an incident's record.
func (c caller) by() string { return fmt.Sprintf("%s (api, from %s)", c.token.Name, c.addr) }

// handler answers a request with a status and a JSON body, or an error.
type handler func(r *http.Request, c caller) (int, any, error)

func (a *API) routes() {
	a.mux.HandleFunc("GET "+Prefix+"/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(Document)
	})
	read := func(pattern string, h handler) { a.mux.Handle(pattern, a.guard(config.APIRead, h)) }
	act := func(pattern string, h handler) { a.mux.Handle(pattern, a.guard(config.APIAct, h)) }
	read("GET "+Prefix+"/status", a.status)
	read("GET "+Prefix+"/schedules", a.schedules)
	read("GET "+Prefix+"/schedules/{name}", a.oneSchedule)
	read("GET "+Prefix+"/schedules/{name}/next", a.next)
	act("POST "+Prefix+"/schedules/{name}/trigger", a.trigger)
	act("POST "+Prefix+"/schedules/{name}/pause", a.pause)
	act("POST "+Prefix+"/schedules/{name}/resume", a.resume)
	act("POST "+Prefix+"/schedules/{name}/backfill", a.backfill)
	read("GET "+Prefix+"/jobs", a.jobs)
	read("GET "+Prefix+"/jobs/{id}", a.job)
	act("POST "+Prefix+"/jobs/{id}/retry", a.retry)
	act("POST "+Prefix+"/jobs/{id}/cancel", a.cancel)
	act("POST "+Prefix+"/jobs/{id}/discard", a.discard)
	read("GET "+Prefix+"/alarms", a.alarms)
	read("GET "+Prefix+"/incidents", a.incidents)
	act("POST "+Prefix+"/incidents/{id}/ack", a.ack)
}

// ServeHTTP serves the API: paths under Prefix, others not found. A
// request whose Host does not name this server is refused first.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !a.clients.HostAllowed(r) {
		a.log.WarnContext(r.Context(), "api request refused: unknown host", "remote_addr", a.clients.Addr(r), "path", r.URL.Path, "host", r.Host)
		writeProblem(w, problemf(http.StatusMisdirectedRequest, codeMisdirected,
			"this server does not answer to the host %q: reach it by localhost or an IP address, or add the name to [http] hosts", r.Host))
		return
	}
	if _, pattern := a.mux.Handler(r); pattern == "" {
		a.notFound(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// notFound answers a path or method the API does not have.
func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := a.mux.Handler(probe); pattern != "" && m != r.Method {
			w.Header().Set("Allow", m)
			writeProblem(w, problemf(http.StatusMethodNotAllowed, codeMethod, "%s %s: this path takes %s", r.Method, r.URL.Path, m))
			return
		}
	}
	writeProblem(w, problemf(http.StatusNotFound, codeNotFound, "no API path %s: see %s/openapi.json", r.URL.Path, Prefix))
}

// guard checks the bearer token, its access, then runs h and writes its
// answer. Cookies are never read.
func (a *API) guard(need config.APIAccess, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := caller{addr: a.clients.Addr(r)}
		tok, p, challenge := a.authenticate(r)
		if p != nil {
			a.log.WarnContext(r.Context(), "api request refused", "remote_addr", c.addr, "path", r.URL.Path, "err", p.detail)
			w.Header().Set("WWW-Authenticate", challenge)
			writeProblem(w, p)
			return
		}
		c.token = tok
		if need == config.APIAct && tok.Access != config.APIAct {
			a.log.WarnContext(r.Context(), "api action refused: read-only token", "who", tok.Name, "remote_addr", c.addr, "path", r.URL.Path)
			writeProblem(w, problemf(http.StatusForbidden, codeForbidden, "token %s may only read: its [[api.token]] access is %q, and %s %s acts",
				tok.Name, tok.Access, r.Method, r.URL.Path))
			return
		}
		status, body, err := h(r, c)
		if err != nil {
			a.writeError(w, r, c, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(body)
	})
}

// bearer is the Authorization scheme, matched without case (RFC 9110).
const bearer = "bearer "

// The WWW-Authenticate challenges of a refusal (RFC 6750).
const (
	challenge        = `Bearer realm="scheduler"`
	challengeInvalid = `Bearer realm="scheduler", error="invalid_token"`
)

// authenticate returns the token of the request's Authorization header,
// or the problem and challenge of a refusal.
func (a *API) authenticate(r *http.Request) (config.APIToken, *problemError, string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return config.APIToken{}, problemf(http.StatusUnauthorized, codeUnauthorized, "no Authorization header: send Authorization: Bearer TOKEN"), challenge
	}
	if len(h) <= len(bearer) || !strings.EqualFold(h[:len(bearer)], bearer) {
		return config.APIToken{}, problemf(http.StatusUnauthorized, codeUnauthorized, "the Authorization header is not Bearer TOKEN"), challenge
	}
	tok, ok := a.cfg.ConfigFunc().API.Token(config.HashToken(strings.TrimSpace(h[len(bearer):])))
	if !ok {
		return config.APIToken{}, problemf(http.StatusUnauthorized, codeUnauthorized, "the token is none of [[api.token]]'s"), challengeInvalid
	}
	return tok, nil, ""
}

// writeError writes err's problem; an internal one is logged.
func (a *API) writeError(w http.ResponseWriter, r *http.Request, c caller, err error) {
	p, internal := asProblem(err)
	if internal {
		a.log.ErrorContext(r.Context(), "api request failed", "who", c.token.Name, "remote_addr", c.addr, "path", r.URL.Path, "err", err)
	}
	writeProblem(w, p)
}

// logAction logs action name done, or refused with err, for c.
func (a *API) logAction(ctx context.Context, c caller, name string, err error, attrs ...any) {
	attrs = append([]any{"action", name, "who", c.token.Name, "remote_addr", c.addr}, attrs...)
	if err != nil {
		a.log.WarnContext(ctx, "api action failed", append(attrs, "err", err)...)
		return
	}
	a.log.InfoContext(ctx, "api action", attrs...)
}
