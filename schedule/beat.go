package schedule

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/liveness"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/alarm"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeySchedule  = "schedule"
	logKeyCursor    = "cursor"
	logKeyRuns      = "runs"
	logKeyJobs      = "jobs"
	logKeySkipped   = "skipped"
	logKeyOverlaps  = "overlaps"
	logKeyFrom      = "from"
	logKeyNextAt    = "next_at"
	logKeyRetryIn   = "retry_in"
	logKeyErr       = "err"
	logKeyItem      = "item"
	logKeyInstant   = "instant"
	logKeyReason    = "reason"
	logKeyPausedAt  = "paused_at"
	logKeySince     = "since"
	logKeyPingEvery = "ping_every"
	logKeyConfig    = "config_sha256"
	logKeyRuling    = "ruling_sha256"
	logKeyConfigs   = "configs"
	logKeyDaemons   = "daemons"
	logKeyMaterial  = "materialises"
	logKeyStarted   = "started"
	logKeyLogged    = "logged"
	logKeyFirstRun  = "first_run"
)

// DefaultMaxSleep is the default BeatConfig.MaxSleep.
const DefaultMaxSleep = 30 * time.Second

// BeatConfig configures a Beat. Zero values select the defaults shown.
type BeatConfig struct {
	Clock  clock.Clock  // Default: clock.Real{}.
	Logger *slog.Logger // Default: discard.
	// MaxSleep is the longest the beat sleeps between passes, so that it
	// notices clock jumps and suspends. Default: 30s.
	MaxSleep time.Duration
	// EventFunc, if set, gets each Event after the commit it reports, on
	// Run's goroutine. It must not block.
	EventFunc func(Event)
	// WroteFunc, if set, is called after each queue.AdvanceBatch of a
	// pass with nil, or the error of a transaction that failed (a cursor
	// another beat moved is none), on the beat's goroutines. It must not
	// block.
	WroteFunc func(err error)
	// FirstPassFunc, if set, is called once each Run has made its first
	// attempt at a pass, whatever its outcome, on Run's goroutine: the
	// start's schedules have been planned and their jobs written.
	FirstPassFunc func()
	// Process is the daemon the beat runs in, as its pools' rows describe
	// it. With Process.Config set (the config file's hex SHA-256, and
	// ConfigAt) the beat materialises only while its config rules (see
	// Agreement). Without it the beat always materialises.
	Process queue.Process
	// TracerProvider, when set, makes each tick that materialises a
	// schedule's jobs a span, their parent (see queue.NewJob.Trace).
	// Default: nil, no span work.
	TracerProvider trace.TracerProvider

	jitter func(n time.Duration) time.Duration // uniform in [0, n); tests fix it
}

// Beat turns the instants of a Config's schedules into queue rows. Each
// pass reads every cursor, computes the instants due since, applies the
// catch-up and daylight-saving rules, and commits each due schedule's
// jobs, skips and new cursor, all or nothing, in few queue.AdvanceBatch
// transactions. Then it sleeps until the next instant, at most MaxSleep,
// or until Apply or Wake.
//
// With BeatConfig.Process.Config set, the beat materialises only while
// its daemon's config rules (see Agreement), and otherwise sits out and
// looks again every few seconds. It warns while the daemons disagree.
//
// A failed pass is retried. While the database does not answer a ping,
// the beat pings it about every second and runs the pass once it
// answers. That pass measures lateness from the last failed attempt, so
// an outage shorter than misfire_grace makes no instant late. Other
// failures retry after a jittered delay doubling from 1s to MaxSleep.
//
// The cursor only moves forward: after a backward clock jump the beat
// waits for the clock to pass it. A schedule without a cursor starts from
// now. Several beats may share a queue: an Advance commits only from the
// cursor its beat read, the loser reads again, and dedup keys make a
// repeated instant insert nothing.
//
// Methods are safe for concurrent use; Run may be called once at a time.
type Beat struct {
	q        *queue.Client
	clock    clock.Clock
	log      *slog.Logger
	maxSleep time.Duration
	wake     chan struct{}

	eventFunc func(Event)
	wroteFunc func(error)
	firstPass func()
	probes    liveness.Probes // see Probe
	running   atomic.Bool
	jitter    func(time.Duration) time.Duration

	mu        sync.Mutex
	cfg       *config.Config
	since     map[string]time.Time // restart marks: Apply added or re-timed these
	process   queue.Process        // see BeatConfig.Process
	agreement *Agreement           // as the last pass found it; nil before one or without a config

	// Only Run's goroutine touches agreedAs through after.
	agreedAs string // the agreement last logged
	// lateFrom, if set, is the start of the last failed attempt: the next
	// pass measures lateness from it.
	lateFrom time.Time
	cursors  cursorMarks      // the cursors around the last pass, the pauses it saw
	alarms   *alarm.Evaluator // judges the alarms after each pass

	// idleFunc, set by tests, is called as the loop is about to wait,
	// with its pass's time, the instant it waits for and its timer.
	idleFunc func(now, next time.Time, wait time.Duration)

	tracer trace.Tracer // from BeatConfig.TracerProvider, or nil
}

// NewBeat returns a Beat for the schedules of cfg, stored in q.
func NewBeat(q *queue.Client, cfg *config.Config, bc BeatConfig) (*Beat, error) {
	switch {
	case q == nil:
		return nil, errors.New("new beat: nil queue")
	case cfg == nil:
		return nil, errors.New("new beat: nil config")
	case bc.MaxSleep < 0:
		return nil, fmt.Errorf("new beat: negative max sleep %s", bc.MaxSleep)
	}
	if bc.Clock == nil {
		bc.Clock = clock.Real{}
	}
	if bc.Logger == nil {
		bc.Logger = slog.New(slog.DiscardHandler)
	}
	if bc.MaxSleep == 0 {
		bc.MaxSleep = DefaultMaxSleep
	}
	if bc.jitter == nil {
		bc.jitter = func(n time.Duration) time.Duration {
			if n <= 0 {
				return 0
			}
			return rand.N(n)
		}
	}
	log := bc.Logger.With(logKeyComponent, "beat")
	var tracer trace.Tracer
	if bc.TracerProvider != nil {
		tracer = bc.TracerProvider.Tracer(tracerName)
	}
	return &Beat{
		tracer:   tracer,
		q:        q,
		clock:    bc.Clock,
		log:      log,
		maxSleep: bc.MaxSleep,
		wake:     make(chan struct{}, 1),
		probes:   liveness.New(),
		jitter:   bc.jitter,
		cfg:      cfg,
		since:    map[string]time.Time{},
		process:  bc.Process,

		alarms:    alarm.New(q, log),
		eventFunc: bc.EventFunc,
		wroteFunc: bc.WroteFunc,
		firstPass: bc.FirstPassFunc,
	}, nil
}

// Wake makes the beat run a pass now, as after another process's pause.
func (b *Beat) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Probe returns a channel that the beat's loop closes when it next comes
// round to wait, and never while it is wedged or after Run returned. A
// watchdog uses it to tell a live beat from a stuck one. Probe never
// blocks and is safe for concurrent use.
func (b *Beat) Probe() <-chan struct{} { return b.probes.Ask() }

// Apply atomically replaces the configuration with cfg, wakes the beat
// and returns the difference; a nil cfg changes nothing. A removed
// schedule stops materialising (its queued jobs still run). An added
// schedule, or one whose cron or zone changed, starts from now.
func (b *Beat) Apply(cfg *config.Config) config.Diff {
	if cfg == nil {
		return config.Diff{}
	}
	now := b.clock.Now().Truncate(time.Second)
	b.mu.Lock()
	d := config.Compare(b.cfg, cfg)
	for _, name := range d.Added {
		b.since[name] = now
	}
	for _, name := range d.Changed {
		old, _ := b.cfg.Schedule(name)
		s, _ := cfg.Schedule(name)
		if old.Cron != s.Cron || old.Location.String() != s.Location.String() {
			b.since[name] = now
		}
	}
	for _, name := range d.Removed {
		delete(b.since, name)
	}
	b.cfg = cfg
	b.mu.Unlock()
	b.Wake()
	return d
}

// Config returns the configuration in use.
func (b *Beat) Config() *config.Config {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cfg
}

// SetProcess replaces BeatConfig.Process, as after a reload, and wakes it.
func (b *Beat) SetProcess(pr queue.Process) {
	b.mu.Lock()
	b.process = pr
	b.mu.Unlock()
	b.Wake()
}

// Agreement returns what the live daemons run as the beat last read it;
// false before its first read or without BeatConfig.Process.Config. It is
// safe for concurrent use.
func (b *Beat) Agreement() (Agreement, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.agreement == nil {
		return Agreement{}, false
	}
	return *b.agreement, true
}
