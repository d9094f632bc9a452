package schedule

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/liveness"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
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
)

// DefaultMaxSleep is the longest the beat waits before it reads the wall
// clock again.
const DefaultMaxSleep = 30 * time.Second

// BeatConfig configures a Beat. Zero values select the defaults shown.
type BeatConfig struct {
	Clock  clock.Clock  // Default: clock.Real{}.
	Logger *slog.Logger // Default: discard.
	// MaxSleep is the longest the beat sleeps between passes, so that it
	// notices wall-clock jumps and suspends. Default: 30s.
	MaxSleep time.Duration
	// EventFunc, when set, is called with each Event of the beat's work,
	// after the commit it reports, from Run's goroutine: it must not
	// block. Nil reports nothing.
	EventFunc func(Event)
	// WroteFunc, when set, is called after each queue.AdvanceBatch call
	// that commits a pass's instants, with nil when its transactions
	// committed and an error when one failed (a cursor another beat moved
	// is no failure), from the beat's goroutines: it must not block. Nil
	// reports nothing.
	WroteFunc func(err error)
	// Process is the daemon the beat runs in, as the rows of its pools
	// describe it. With Process.Config set (the hex SHA-256 of the config
	// file, and ConfigAt when it was loaded) the beat materialises only
	// while its config rules among the live daemons' (see Agreement), and
	// logs when they disagree. Without it the beat materialises always and
	// reads no daemon.
	Process queue.Process

	jitter func(n time.Duration) time.Duration // uniform in [0, n); tests fix it
}

// Beat turns the instants of a Config's schedules into queue rows. Each
// pass reads every schedule's durable cursor, computes the instants due
// since (up to now), applies the catch-up and daylight-saving rules, and
// commits the jobs, the skip records and the new cursor of every schedule
// due in few queue.AdvanceBatch transactions, each schedule all or nothing
// in them, while it plans the next. Then it sleeps until the earliest next
// instant, at most MaxSleep, or until Apply or Wake.
//
// With BeatConfig.Process.Config set, each pass first reads the rows of
// the live daemons' pools: the beat materialises only while its daemon's
// config is the ruling one (see Agreement) and otherwise sits out, looking
// again every few seconds; it logs a warning each time what the daemons
// run changes while they disagree, and a line once they agree again.
//
// A pass that fails is retried. When the database does not answer (a
// ping fails too) the beat pings it every second, give or take half a
// second, and runs the pass as soon as it answers; that pass measures the
// lateness of the instants due at the start of the last attempt that
// failed, not at its own: the wait for the database is not charged to
// them, and an instant that fell due during an outage shorter than
// misfire_grace runs. Any other failure is retried after a delay that
// doubles from a second to MaxSleep, jittered.
//
// The cursor is the last instant materialised or deliberately passed. It
// only moves forward: after a backward jump of the clock nothing is
// materialised again, the beat waits for the clock to pass the cursor. A
// schedule without a cursor starts from now. Several beats may run on one
// queue file: a schedule's Advance commits only from the cursor a beat
// read, even inside a batch; the loser reads again, and dedup keys make a
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
	probes    liveness.Probes // see Probe
	running   atomic.Bool
	jitter    func(time.Duration) time.Duration

	mu        sync.Mutex
	cfg       *config.Config
	since     map[string]time.Time // schedules added or re-timed by Apply: their cursor moves here first
	process   queue.Process        // see BeatConfig.Process and SetProcess
	agreement *Agreement           // as the last pass found it; nil before one, or without a config

	// agreedAs sums up the agreement last logged (see noteAgreement). Only
	// Run's goroutine.
	agreedAs string

	paused map[string]bool // whether each schedule was paused at the last pass; only Run's goroutine
	// lateFrom, when not zero, is where the next pass measures the lateness
	// of the instants due instead of its own start: the start of the last
	// attempt that failed (see Run). Only Run's goroutine.
	lateFrom time.Time

	order   []*config.Schedule // the schedules of orderOf by name (see byName); only Run's goroutine
	orderOf *config.Config

	before map[string]store.Cursor // the cursors as the last pass first read them; only Run's goroutine
	// after are the cursors as the last pass left them: as read, moved by
	// its commits. Only Run's goroutine.
	after  map[string]store.Cursor
	alarms *alarm.Evaluator // judges the alarms after each pass

	// idleFunc, when set (by tests), is called each time the loop is about
	// to wait, after its timer is set, with the time its pass (or its ping
	// of a database that does not answer) ran at, the instant it waits for
	// and how long its timer is.
	idleFunc func(now, next time.Time, wait time.Duration)
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
	return &Beat{
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
		paused:   map[string]bool{},

		alarms:    alarm.New(q, log),
		eventFunc: bc.EventFunc,
		wroteFunc: bc.WroteFunc,
	}, nil
}

// Wake makes the beat run a pass now, as after a change it cannot see, such
// as a pause or a resume by another process.
func (b *Beat) Wake() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Probe returns a channel that the beat's loop closes the next time it
// comes round to wait: at once when it sleeps, after its pass when it is
// materialising, and never while it is wedged (nor once Run has returned).
// A daemon's watchdog uses it to tell a live beat from a stuck one. Probe
// never blocks; it is safe to call from any goroutine.
func (b *Beat) Probe() <-chan struct{} { return b.probes.Ask() }

// Apply replaces the beat's configuration with cfg, atomically, and wakes
// the beat. A removed schedule stops materialising (its queued jobs still
// run). An added schedule, and a schedule whose cron expression or zone
// changed, start from now: instants before now, under either expression,
// are not materialised. Apply returns the difference; a nil cfg changes
// nothing.
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

// SetProcess replaces the description of the daemon the beat runs in (see
// BeatConfig.Process), as after a reload that loaded another config, and
// wakes the beat.
func (b *Beat) SetProcess(pr queue.Process) {
	b.mu.Lock()
	b.process = pr
	b.mu.Unlock()
	b.Wake()
}

// Agreement returns what the live daemons run as the beat last read it,
// and false before its first read or when the beat has no config (see
// BeatConfig.Process). It is safe to call from any goroutine.
func (b *Beat) Agreement() (Agreement, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.agreement == nil {
		return Agreement{}, false
	}
	return *b.agreement, true
}
