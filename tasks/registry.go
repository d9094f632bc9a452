package tasks

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// ErrNoHandler is the error of a task with no command, URL or Go handler.
var ErrNoHandler = errors.New("neither command nor url given and no go handler registered")

// SpecError is a task whose Spec Registry.Handler cannot run.
type SpecError struct {
	Task string // the task's name
	Err  error
}

func (e *SpecError) Error() string { return fmt.Sprintf("task %q: %v", e.Task, e.Err) }

// Unwrap returns why the task cannot run.
func (e *SpecError) Unwrap() error { return e.Err }

// Spec is how a [tasks.NAME] table says a task runs: a Command, a URL, or
// neither for a registered Go handler. The other fields refine a command
// or a URL and are errors anywhere else.
type Spec struct {
	Command            []string          // see CommandConfig.Argv
	Env                map[string]string // see CommandConfig.Env
	Dir                string            // see CommandConfig.Dir
	PermanentExitCodes []int             // see CommandConfig.PermanentExitCodes
	URL                string            // see HTTPConfig.URL
	Method             string            // see HTTPConfig.Method
	Headers            map[string]string // see HTTPConfig.Headers
	FollowRedirects    bool              // see HTTPConfig.FollowRedirects
	KillGrace          time.Duration     // see CommandConfig.KillGrace; zero takes the Registry's
	Zones              map[string]string // see CommandConfig.Zones (kept, not copied); ignored by other kinds
	Limits             Limits            // see CommandConfig.Limits
}

// Config configures a Registry. Zero values select the defaults shown.
type Config struct {
	Logger     *slog.Logger  // Given to every built-in handler. Default: discard.
	Clock      clock.Clock   // Given to every built-in handler. Default: clock.Real{}.
	KillGrace  time.Duration // See CommandConfig.KillGrace. Default: 10s.
	HTTPClient *http.Client  // Shared by URL tasks. Default: no overall timeout.
	Launcher   string        // See CommandConfig.Launcher. Default: the running binary.
}

// Registry maps task names to Go handlers and to the command and HTTP
// handlers it makes from a Spec. It is safe for concurrent use.
type Registry struct {
	cfg Config

	mu       sync.RWMutex
	handlers map[string]queue.Handler
	groups   ProcessGroups
}

// NewRegistry returns an empty Registry.
func NewRegistry(cfg Config) *Registry {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &Registry{cfg: cfg, handlers: make(map[string]queue.Handler)}
}

// Register makes h the Go handler of the task called name. It fails for an
// empty name, a nil handler or a name already registered.
func (r *Registry) Register(name string, h queue.Handler) error {
	if name == "" {
		return errors.New("register task: name is empty")
	}
	if h == nil {
		return fmt.Errorf("register task %q: handler is nil", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.handlers[name]; ok {
		return fmt.Errorf("register task %q: already registered", name)
	}
	r.handlers[name] = h
	return nil
}

// Register makes the typed handler fn the Go handler of the task called
// name in r, as Registry.Register does: a [tasks.NAME] table with neither
// command nor url then runs it, with the job's payload decoded into T (see
// queue.WorkFunc). An empty name takes T's Kind (see queue.JobArgs); a name
// that differs from it is an error.
func Register[T any](r *Registry, name string, fn queue.WorkFunc[T]) error {
	if fn == nil {
		return fmt.Errorf("register task %q: handler is nil", name)
	}
	var zero T
	typ, err := queue.TypeOf(name, zero)
	if err != nil {
		return fmt.Errorf("register task: %w", err)
	}
	return r.Register(typ, fn)
}

// KillRunning kills every running command and all it started, for a
// program that must exit at once, and returns how many.
func (r *Registry) KillRunning() int { return r.groups.KillAll() }

// Names returns the names of the registered Go handlers, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.handlers))
}

// Handler returns the handler of the task name as s describes it: a
// Command, an HTTP handler, or else the registered Go handler. A
// *SpecError reports a Spec with both command and URL, fields of the
// other kind, a command or URL beside a Go handler, or nothing to run
// (ErrNoHandler).
func (r *Registry) Handler(name string, s Spec) (queue.Handler, error) {
	r.mu.RLock()
	goHandler, registered := r.handlers[name]
	r.mu.RUnlock()

	hasCommand, hasURL := s.Command != nil, s.URL != ""
	commandOnly := s.Env != nil || s.Dir != "" || s.PermanentExitCodes != nil || !s.Limits.IsZero()
	urlOnly := s.Method != "" || s.Headers != nil || s.FollowRedirects
	switch {
	case hasCommand && hasURL:
		return nil, &SpecError{Task: name, Err: errors.New("command and url are mutually exclusive")}
	case (hasCommand || hasURL) && registered:
		return nil, &SpecError{Task: name, Err: errors.New("a go handler is registered under this name; it takes no command or url")}
	case hasCommand && urlOnly:
		return nil, &SpecError{Task: name, Err: errors.New("method, headers and follow redirects apply only to a url")}
	case hasURL && commandOnly:
		return nil, &SpecError{Task: name, Err: errors.New("env, dir, permanent exit codes and limits apply only to a command")}
	case hasCommand:
		c, err := NewCommand(CommandConfig{
			Argv:               s.Command,
			Env:                s.Env,
			Dir:                s.Dir,
			Zones:              s.Zones,
			PermanentExitCodes: s.PermanentExitCodes,
			KillGrace:          cmp.Or(s.KillGrace, r.cfg.KillGrace),
			Clock:              r.cfg.Clock,
			Logger:             r.cfg.Logger,
			Groups:             &r.groups,
			Limits:             s.Limits,
			Launcher:           r.cfg.Launcher,
		})
		if err != nil {
			return nil, &SpecError{Task: name, Err: err}
		}
		return c, nil
	case hasURL:
		h, err := NewHTTP(HTTPConfig{
			URL:             s.URL,
			Method:          s.Method,
			Headers:         s.Headers,
			FollowRedirects: s.FollowRedirects,
			Client:          r.cfg.HTTPClient,
			Clock:           r.cfg.Clock,
			Logger:          r.cfg.Logger,
		})
		if err != nil {
			return nil, &SpecError{Task: name, Err: err}
		}
		return h, nil
	case commandOnly || urlOnly:
		return nil, &SpecError{Task: name, Err: errors.New("env, dir, permanent exit codes, limits, method, headers and follow redirects need a command or url")}
	case !registered:
		return nil, &SpecError{Task: name, Err: ErrNoHandler}
	}
	return goHandler, nil
}
