package dashboard

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures the dashboard. Queue and ConfigFunc are required.
type Config struct {
	// Queue is the database the pages read.
	Queue *queue.Client
	// ConfigFunc returns the config the daemon runs now.
	ConfigFunc func() *config.Config
	// DeadlineFunc returns a schedule's deadline as the beat judged it.
	DeadlineFunc func(schedule string) (time.Time, bool)
	// SessionFunc tells who asks and may do what; nil: all read, none act.
	SessionFunc func(r *http.Request) Session
	// AgreementFunc returns the live daemons' configs as the beat last read
	// them; while they differ every page says so, and while the config file
	// on disk does not load or is not what they run, every page has a
	// banner saying what to do. Nil: neither.
	AgreementFunc func() (schedule.Agreement, bool)
	// Clock gives "now" for relative times. Default: the queue's clock.
	Clock  clock.Clock
	Logger *slog.Logger // Default: discard.
}

// Session is what a request may see and do; every page carries it to
// show who is logged in and the action forms.
type Session struct {
	Who     string // the user's name, or "token"; empty when not logged in
	Actions bool   // the action forms are shown
	CSRF    string // the token each action form carries
	Flash   string // a message of the last action, shown once
	Back    string // the page's path and query, where an action returns
}

// Bounds of the pages: every read is at most this many rows.
const (
	// StripLen is how many instants the strip of a schedule shows.
	StripLen = 60
	// JobsPage is how many jobs one page of /jobs lists.
	JobsPage = 50
	// AlarmsPage is how many alarms /alarms lists.
	AlarmsPage = 50
	// alarmNotifications is how many notification jobs, one per notify
	// task, /alarms lists per alarm.
	alarmNotifications = 20
	// scheduleRuns is how many recent runs a schedule's page lists.
	scheduleRuns = 20
	// nextRuns is how many next runs a page shows per schedule.
	nextRuns = 3
	// deadlineAlarms is how many newest alarms give a schedule's deadline
	// state and mark its missed instants.
	deadlineAlarms = 100
)

// contentSecurityPolicy allows the dashboard's own scripts, styles, images
// and form targets only, and no framing.
const contentSecurityPolicy = "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"

// server holds the dashboard's state; it is safe for concurrent use.
type server struct {
	cfg   Config
	q     *queue.Client
	clock clock.Clock
	log   *slog.Logger
	pages map[string]*template.Template
	live  *template.Template // a running job's output, the run page's part that live.js refreshes
}

// New returns the dashboard's handler for "/"; it answers GET only.
func New(cfg Config) (http.Handler, error) {
	if cfg.Queue == nil {
		return nil, errors.New("dashboard: no queue")
	}
	if cfg.ConfigFunc == nil {
		return nil, errors.New("dashboard: no ConfigFunc")
	}
	if cfg.Clock == nil {
		cfg.Clock = cfg.Queue.Clock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionFunc == nil {
		cfg.SessionFunc = func(*http.Request) Session { return Session{} }
	}
	s := &server{cfg: cfg, q: cfg.Queue, clock: cfg.Clock, log: cfg.Logger.With("component", "dashboard"),
		pages: map[string]*template.Template{}}
	for _, name := range []string{"schedules", "schedule", "run", "jobs", "alarms", "daemons", "error", "charts", "after"} {
		files := []string{"templates/layout.html", "templates/" + name + ".html"}
		if name == "schedule" || name == "charts" {
			files = append(files, "templates/chart.html")
		}
		if name == "schedule" || name == "after" {
			files = append(files, "templates/chain.html")
		}
		if name == "run" {
			files = append(files, "templates/live.html")
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, files...)
		if err != nil {
			return nil, fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		s.pages[name] = t
	}
	live, err := template.New("live").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/live.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: template live: %w", err)
	}
	s.live = live
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.schedules)
	mux.HandleFunc("GET /schedules/{name...}", s.schedule)
	mux.HandleFunc("GET /runs/{id}", s.run)
	mux.HandleFunc("GET /runs/{id}/live", s.liveOutput)
	mux.HandleFunc("GET /run", s.runOf)
	mux.HandleFunc("GET /jobs", s.jobs)
	mux.HandleFunc("GET /alarms", s.alarms)
	mux.HandleFunc("GET /daemons", s.daemons)
	mux.HandleFunc("GET /charts", s.charts)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/static/icon.svg", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no page at "+r.URL.Path)
	})
	return headers(mux), nil
}

// headers sets every response's security headers, and no-store: pages
// change with every job.
func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// page is every template's data: the layout's fields and the page's own.
type page struct {
	Title   string
	Nav     string // the nav link marked current: schedules, jobs, alarms, daemons or charts
	Session Session
	Now     When
	Refresh int    // seconds between reloads by refresh.js; 0: none
	Configs string // the live daemons' configs differ; empty while they agree
	Banner  string // the config file on disk is broken or not what the daemons run
	Data    any
}

// banner is every page's warning while the config file on disk does not
// load or differs from what the live daemons run (schedule.CheckDisk).
func (s *server) banner() string {
	if s.cfg.AgreementFunc == nil {
		return ""
	}
	cfg := s.cfg.ConfigFunc()
	if cfg == nil || cfg.File == "" {
		return ""
	}
	a, _ := s.cfg.AgreementFunc()
	return schedule.CheckDisk(cfg.File, a).Warning()
}

// configsWarning is every page's warning while the daemons' configs differ.
func (s *server) configsWarning() string {
	if s.cfg.AgreementFunc == nil {
		return ""
	}
	a, ok := s.cfg.AgreementFunc()
	if !ok || a.Agreed() {
		return ""
	}
	part := "this daemon's beat sits out: its config is not the newest"
	if a.SelfRules {
		part = "this daemon's beat materialises: its config is the newest"
	}
	return fmt.Sprintf("The live daemons run %d different configs: only the daemons of the newest one materialise instants, with its schedules and fan-out items; %s. %s.",
		a.Configs, part, a)
}

// render writes the page name, or a 500. It renders into a buffer first,
// so that a failure halfway does not send half a page with a 200.
func (s *server) render(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, data any) {
	p := page{Title: title, Nav: nav, Session: s.cfg.SessionFunc(r), Now: s.when(s.clock.Now(), time.UTC), Refresh: 30,
		Configs: s.configsWarning(), Banner: s.banner(), Data: data}
	if d, ok := data.(runPage); ok && d.Live != nil {
		p.Refresh = 0 // live.js refreshes the output alone
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.ErrorContext(r.Context(), "page not rendered", "page", name, "err", err)
		http.Error(w, "page not rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	io.Copy(w, &buf)
}

// errorPage is the data of the error page.
type errorPage struct {
	Status  int
	Message string
}

// fail answers with an error page.
func (s *server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	p := page{Title: http.StatusText(status), Session: s.cfg.SessionFunc(r), Now: s.when(s.clock.Now(), time.UTC),
		Banner: s.banner(), Data: errorPage{Status: status, Message: msg}}
	var buf bytes.Buffer
	if err := s.pages["error"].ExecuteTemplate(&buf, "layout", p); err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	io.Copy(w, &buf)
}

// failRead answers a failed read: 404 when not found, else a logged 500.
func (s *server) failRead(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, queue.ErrNotFound) {
		s.fail(w, r, http.StatusNotFound, what+": not found")
		return
	}
	s.log.ErrorContext(r.Context(), "dashboard read failed", "page", r.URL.Path, "err", err)
	s.fail(w, r, http.StatusInternalServerError, what+": "+err.Error())
}

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"orDash":    orDash,
	"firstLine": firstLine,
	"stripOf":   func(item string, cells []Cell) itemStrip { return itemStrip{Item: item, Cells: cells} },
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
