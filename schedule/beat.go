package schedule

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/liveness"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
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

// maxSkipLines bounds the "run skipped" lines of one advance of a schedule:
// after long downtime of a frequent schedule the "instants skipped" line
// counts the rest.
const maxSkipLines = 100

// DefaultMaxSleep is the longest the beat waits before it reads the wall
// clock again.
const DefaultMaxSleep = 30 * time.Second

// maxAdvanceRetries bounds how often one pass retries a schedule whose
// cursor another beat moved.
const maxAdvanceRetries = 5

// pingEvery is how often a beat whose database does not answer pings it,
// give or take half of it at random (so that the beats of many nodes do
// not reach a recovering server in step); the pass runs as soon as a ping
// answers.
const pingEvery = time.Second

// pingTimeout bounds a ping of the database, so that a server that neither
// answers nor refuses (a network partition) cannot hold the beat's loop.
const pingTimeout = 5 * time.Second

// sitOutRecheck is how often a beat that sits out, its daemon's config not
// the ruling one (see Agreement), reads the daemons' rows again, to take
// over soon after the ruling daemon stops or reloads.
const sitOutRecheck = 5 * time.Second

// BeatConfig configures a Beat. Zero values select the defaults shown.
type BeatConfig struct {
	Clock  clock.Clock  // Default: clock.Real{}.
	Logger *slog.Logger // Default: discard.
	// MaxSleep is the longest the beat sleeps between passes, so that it
	// notices wall-clock jumps and suspends. Default: 30s.
	MaxSleep time.Duration
	// AlarmFunc, when set, is called with the schedule and kind of each
	// alarm this beat raised, after its commit, from Run's goroutine; it
	// must not block. An alarm raised by another process is not reported.
	AlarmFunc func(schedule, kind string)
	// MaterialisedFunc, when set, is called once a pass committed the due
	// instants of a schedule, with the number of jobs it inserted (one
	// per fan-out item of each run), from the beat's goroutine: it must
	// not block. Nil reports nothing.
	MaterialisedFunc func(schedule string, jobs int)
	// SkippedFunc, when set, is called likewise with the number of runs
	// the commit recorded as skipped for a reason (an item's run counts
	// once). Nil reports nothing.
	SkippedFunc func(schedule string, reason store.SkipReason, runs int)
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

	materialisedFunc func(string, int)
	skippedFunc      func(string, store.SkipReason, int)
	wroteFunc        func(error)
	probes           liveness.Probes // see Probe
	running          atomic.Bool
	jitter           func(time.Duration) time.Duration

	mu        sync.Mutex
	cfg       *Config
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

	order   []*Schedule // the schedules of orderOf by name (see byName); only Run's goroutine
	orderOf *Config

	alarmFunc func(schedule, kind string)
	deadSeen  map[string]time.Time    // dead alarms raised within deadLookback, by key; only Run's goroutine
	before    map[string]store.Cursor // the cursors as the last pass first read them; only Run's goroutine
	deadAfter time.Time               // where a truncated read of dead jobs goes on; only Run's goroutine
	// after are the cursors as the last pass left them: as read, moved by
	// its commits. Another beat's moves since are not in it: the alarms'
	// judgement, which reads it, then judges less, never wrongly. Only
	// Run's goroutine.
	after map[string]store.Cursor
	// marks caches the alarm marks: read once, then kept as this beat
	// writes them (another beat's marks, being monotonic, only save work).
	// Only Run's goroutine.
	marks     map[string]store.AlarmMark
	deadlines map[string]time.Time // see Deadline; under mu
	alarmed   map[string]bool      // schedules with open alarms at the last pass (see JobEnded); under mu
	held      bool                 // a recovery waits for an alarm's notification (see NotificationEnded); under mu

	// idleFunc, when set (by tests), is called each time the loop is about
	// to wait, after its timer is set, with the time its pass (or its ping
	// of a database that does not answer) ran at, the instant it waits for
	// and how long its timer is.
	idleFunc func(now, next time.Time, wait time.Duration)
}

// NewBeat returns a Beat for the schedules of cfg, stored in q.
func NewBeat(q *queue.Client, cfg *Config, bc BeatConfig) (*Beat, error) {
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
	return &Beat{
		q:        q,
		clock:    bc.Clock,
		log:      bc.Logger.With(logKeyComponent, "beat"),
		maxSleep: bc.MaxSleep,
		wake:     make(chan struct{}, 1),
		probes:   liveness.New(),
		jitter:   bc.jitter,
		cfg:      cfg,
		since:    map[string]time.Time{},
		process:  bc.Process,
		paused:   map[string]bool{},

		alarmFunc:        bc.AlarmFunc,
		deadSeen:         map[string]time.Time{},
		materialisedFunc: bc.MaterialisedFunc,
		skippedFunc:      bc.SkippedFunc,
		wroteFunc:        bc.WroteFunc,
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
func (b *Beat) Apply(cfg *Config) Diff {
	if cfg == nil {
		return Diff{}
	}
	now := b.clock.Now().Truncate(time.Second)
	b.mu.Lock()
	d := Compare(b.cfg, cfg)
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
func (b *Beat) Config() *Config {
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

// Run materialises instants until ctx is done, then returns nil. A failed
// pass is logged and retried (see Beat); Run itself fails only when called
// while another Run is active.
func (b *Beat) Run(ctx context.Context) error {
	if !b.running.CompareAndSwap(false, true) {
		return errors.New("beat: already running")
	}
	defer b.running.Store(false)
	b.log.InfoContext(ctx, "beat started")
	defer b.log.InfoContext(ctx, "beat stopped")
	var retry time.Duration
	for ctx.Err() == nil {
		now := b.clock.Now()
		var next time.Time
		rules, err := b.agree(ctx, now)
		if err == nil && rules {
			next, err = b.pass(ctx, now)
			if ctx.Err() == nil {
				// The alarms are judged after the instants due by now are
				// materialised: an instant the downtime passed has its job.
				due, aerr := b.evalAlarms(ctx, b.Config(), now)
				err = errors.Join(err, aerr)
				if !due.IsZero() && (next.IsZero() || due.Before(next)) {
					next = due
				}
			}
		}
		wait := b.maxSleep
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			b.lateFrom = now
			if at := b.clock.Now(); b.ping(ctx) != nil {
				b.log.ErrorContext(ctx, "beat pass failed: database unreachable", logKeyPingEvery, pingEvery, logKeyErr, err)
				if !b.awaitDatabase(ctx, at) {
					return nil
				}
				continue
			}
			// The schedules that did advance still wake the beat on time.
			retry = min(max(2*retry, time.Second), b.maxSleep)
			wait = retry - retry/2 + b.jitter(retry/2+1)
			b.log.ErrorContext(ctx, "beat pass failed", logKeyRetryIn, wait, logKeyErr, err)
		case !rules:
			retry, b.lateFrom = 0, time.Time{}
			wait = min(wait, sitOutRecheck)
		default:
			retry, b.lateFrom = 0, time.Time{}
		}
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(b.clock.Now()), 0))
		}
		timer := b.clock.After(wait)
		if b.idleFunc != nil {
			b.idleFunc(now, next, wait)
		}
		b.probes.Answer()
		b.sleep(ctx, timer)
	}
	return nil
}

// awaitDatabase pings the database, which did not answer a ping at at,
// every pingEvery give or take half of it, until it answers (true) or ctx
// is done (false). Each ping that fails moves lateFrom to its start.
func (b *Beat) awaitDatabase(ctx context.Context, at time.Time) bool {
	since := b.lateFrom
	b.lateFrom = at
	for {
		wait := pingEvery/2 + b.jitter(pingEvery)
		timer := b.clock.After(wait)
		if b.idleFunc != nil {
			b.idleFunc(at, time.Time{}, wait)
		}
		b.probes.Answer()
		b.sleep(ctx, timer)
		if ctx.Err() != nil {
			return false
		}
		at = b.clock.Now()
		err := b.ping(ctx)
		if err == nil {
			b.log.InfoContext(ctx, "database answers again: beat resumes", logKeySince, since)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		b.lateFrom = at
		b.log.DebugContext(ctx, "database still unreachable", logKeyErr, err)
	}
}

// ping reads the database, cheaply, within pingTimeout.
func (b *Beat) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return b.q.Ping(ctx)
}

// agree reads the daemons' rows and reports whether the config of this
// beat's daemon rules (see Agreement), logging a change of their
// agreement. A beat without a config rules and reads nothing.
func (b *Beat) agree(ctx context.Context, now time.Time) (bool, error) {
	b.mu.Lock()
	self := b.process
	b.mu.Unlock()
	if self.Config == "" {
		return true, nil
	}
	ds, err := b.q.Pools(ctx)
	if err != nil {
		return false, fmt.Errorf("read daemons: %w", err)
	}
	a := Agree(ds, self, now)
	b.mu.Lock()
	b.agreement = &a
	b.mu.Unlock()
	b.noteAgreement(ctx, self, a)
	return a.SelfRules, nil
}

// noteAgreement logs a when it differs from the agreement last logged: a
// warning while the live daemons run different configs, each time the
// set of configs, the ruling one or this beat's part changes; a line
// when they agree again.
func (b *Beat) noteAgreement(ctx context.Context, self queue.Process, a Agreement) {
	configs := map[string]bool{}
	for _, d := range a.Daemons {
		configs[d.Config] = true
	}
	as := ""
	if !a.Agreed() {
		as = fmt.Sprint(a.Ruling, a.SelfRules, slices.Sorted(maps.Keys(configs)))
	}
	if as == b.agreedAs {
		return
	}
	was := b.agreedAs
	b.agreedAs = as
	switch {
	case as != "":
		b.log.WarnContext(ctx, "daemons run different configs", logKeyConfig, self.Config, logKeyRuling, a.Ruling,
			logKeyMaterial, a.SelfRules, logKeyConfigs, a.Configs, logKeyDaemons, a.String())
	case was != "":
		b.log.InfoContext(ctx, "daemons agree on the config", logKeyConfig, self.Config)
	}
}

// sleep waits for ctx, timer or a wake-up, answering probes meanwhile.
func (b *Beat) sleep(ctx context.Context, timer <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer:
			return
		case <-b.wake:
			return
		case ch := <-b.probes.Waiting():
			close(ch)
		}
	}
}

// pass advances every schedule to now and returns the earliest instant
// that will be due next (zero if none). The instants due are planned in
// the order of the schedules' names and committed by queue.AdvanceBatch
// calls, each schedule with its own compare-and-set of its cursor (see
// commitTicks); the schedules whose cursor another beat moved are read
// again and retried together.
func (b *Beat) pass(ctx context.Context, now time.Time) (time.Time, error) {
	b.mu.Lock()
	cfg, since := b.cfg, maps.Clone(b.since)
	b.mu.Unlock()

	var next time.Time
	var errs []error
	earliest := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}
	todo := b.byName(cfg)
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt > maxAdvanceRetries {
			for _, s := range todo {
				errs = append(errs, fmt.Errorf("schedule %s: cursor moved %d times: %w", s.Name, attempt, store.ErrCursorMoved))
			}
			break
		}
		// After the first round, another beat moved the cursors of todo:
		// read them again.
		seen := func(store.Cursor) {}
		if attempt == 0 {
			// Sized as the last pass found them: grown from empty, the two
			// maps were a seventh of the bytes a tick of 10,000 schedules
			// allocated.
			n := max(len(b.before), len(todo))
			b.before, b.after = make(map[string]store.Cursor, n), make(map[string]store.Cursor, n)
			seen = func(c store.Cursor) {
				b.before[c.Schedule] = c
				b.after[c.Schedule] = c
			}
		}
		cursors := readCursors(ctx, b.q, seen)
		var lost []*Schedule
		failed := false
		plan := func(yield func(*tick)) {
			for _, s := range todo {
				cur, ok, err := cursors.of(s.Name)
				if err != nil {
					errs = append(errs, err)
					failed = true
					return
				}
				b.notePause(ctx, s, cur)
				if t, at := b.advance(cfg, s, cur, ok, since, now); t != nil {
					yield(t)
				} else {
					earliest(at)
				}
			}
		}
		b.commitTicks(ctx, plan, func(t *tick, r store.AdvanceResult) {
			switch {
			case errors.Is(r.Err, store.ErrCursorMoved):
				lost = append(lost, t.s)
			case r.Err != nil:
				errs = append(errs, r.Err)
			default:
				if t.moved != nil {
					b.committedMove(ctx, t, since)
				}
				if len(t.due) > 0 {
					b.materialised(ctx, t, r.Jobs)
				}
				c := t.cur
				c.At = t.to
				b.after[c.Schedule] = c
				earliest(t.next)
			}
		}, func(err error) {
			errs = append(errs, err)
			failed = true
		})
		if err := cursors.close(); err != nil && !failed {
			errs = append(errs, err)
			failed = true
		}
		if failed {
			break
		}
		slices.SortFunc(lost, func(x, y *Schedule) int { return strings.Compare(x.Name, y.Name) })
		todo = lost
	}
	return next, errors.Join(errs...)
}

// Bounds of the rows (jobs, skips and the cursor) of the ticks that
// commitTicks hands to one AdvanceBatch call.
const (
	// minCommitRows: below it, a batch waits for more ticks even when the
	// writer is idle. A batch costs a transaction, whose commit writes the
	// pages that every batch shares (the cursors', the counts', the last
	// leaf of each index) once more.
	minCommitRows = 250
	// maxCommitRows: at it, the planning waits for the writer. It is the
	// store's transaction size, so that a batch is one transaction.
	maxCommitRows = store.AdvanceBatchRows
)

// batchErr is the failure of an AdvanceBatch call that returned res and
// err: err, else the first result's error that is not a cursor another
// beat moved (the store gives each Advance of a transaction that failed its
// error); nil when everything committed.
func batchErr(res []store.AdvanceResult, err error) error {
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil && !errors.Is(r.Err, store.ErrCursorMoved) {
			return r.Err
		}
	}
	return nil
}

// commitTicks commits the ticks that plan yields, in their order, by
// AdvanceBatch calls on a goroutine of its own, and calls result with each
// tick and its result, in the same order, from the calling goroutine once
// plan has returned; a call that failed as a whole goes to failed instead,
// once per call, and its ticks to neither.
//
// The goroutine is for speed. Planning a tick (reading the cron fields,
// the zone's rules, building the jobs) is a fifth of the work of a tick of
// many schedules and the writer's inserts most of the rest; one after the
// other they would take the sum, here they take about the longer. A batch
// is handed over as soon as the writer is free and it holds minCommitRows,
// so the writer starts after the first few schedules and then takes what
// the planning made meanwhile, up to maxCommitRows at a time.
func (b *Beat) commitTicks(ctx context.Context, plan func(yield func(*tick)), result func(*tick, store.AdvanceResult), failed func(error)) {
	type batch struct {
		ticks []*tick
		res   []store.AdvanceResult
		err   error
		done  chan struct{}
	}
	work := make(chan *batch) // unbuffered: a send is taken only by an idle writer
	go func() {
		for bt := range work {
			advs := make([]store.Advance, len(bt.ticks))
			for i, t := range bt.ticks {
				advs[i] = t.adv
			}
			bt.res, bt.err = b.q.AdvanceBatch(ctx, advs)
			if b.wroteFunc != nil {
				b.wroteFunc(batchErr(bt.res, bt.err))
			}
			close(bt.done)
		}
	}()
	var sent []*batch
	cur, rows := &batch{done: make(chan struct{})}, 0
	send := func() {
		work <- cur
		sent = append(sent, cur)
		cur, rows = &batch{done: make(chan struct{})}, 0
	}
	plan(func(t *tick) {
		cur.ticks = append(cur.ticks, t)
		rows += 1 + len(t.adv.Jobs) + len(t.adv.Skips)
		switch {
		case rows >= maxCommitRows:
			send()
		case rows >= minCommitRows:
			select {
			case work <- cur:
				sent = append(sent, cur)
				cur, rows = &batch{done: make(chan struct{})}, 0
			default: // the writer is busy: plan more meanwhile
			}
		}
	})
	if len(cur.ticks) > 0 {
		send()
	}
	close(work)
	for _, bt := range sent {
		<-bt.done
		if bt.err != nil {
			failed(bt.err)
			continue
		}
		for i, t := range bt.ticks {
			result(t, bt.res[i])
		}
	}
}

// byName returns the schedules of cfg in the order of their names, the
// order in which AdvanceBatch commits them: a batch of neighbours in it
// writes neighbouring pages of the indexes that begin with the name. It is
// kept for the config last asked about.
func (b *Beat) byName(cfg *Config) []*Schedule {
	if b.orderOf != cfg {
		b.order = slices.SortedFunc(slices.Values(cfg.Schedules), func(x, y *Schedule) int {
			return strings.Compare(x.Name, y.Name)
		})
		b.orderOf = cfg
	}
	return b.order
}

// cursorReader reads a queue's cursors in the order of the schedules'
// names while a pass plans the schedules in that order, a merge of the two:
// the planning starts at the first row instead of after the last, and the
// writer with it (see commitTicks).
type cursorReader struct {
	next func() (store.Cursor, bool)
	stop func()
	head store.Cursor // the next cursor, if more
	more bool
	err  error // the read's, once more is false
	seen func(store.Cursor)
}

// readCursors starts reading the cursors of q; seen is called with each
// cursor read, in order, before of returns it.
func readCursors(ctx context.Context, q *queue.Client, seen func(store.Cursor)) *cursorReader {
	r := &cursorReader{seen: seen}
	r.next, r.stop = iter.Pull(func(yield func(store.Cursor) bool) {
		r.err = q.CursorsByName(ctx, yield)
	})
	r.head, r.more = r.next()
	return r
}

// of returns the cursor of the schedule name, if it has one. Each name
// asked for must come after the one before in byte order.
func (r *cursorReader) of(name string) (store.Cursor, bool, error) {
	for r.more && r.head.Schedule < name {
		r.seen(r.head)
		r.head, r.more = r.next()
	}
	if r.more && r.head.Schedule == name {
		c := r.head
		r.seen(c)
		r.head, r.more = r.next()
		return c, true, nil
	}
	if !r.more && r.err != nil {
		return store.Cursor{}, false, r.err
	}
	return store.Cursor{}, false, nil
}

// close reads the cursors not asked for, which seen still gets, ends the
// read and returns its error.
func (r *cursorReader) close() error {
	for r.more {
		r.seen(r.head)
		r.head, r.more = r.next()
	}
	r.stop()
	return r.err
}

// advance plans the instants of s due by now, and the creation of its
// cursor or its restart if needed: the tick that commits them, or none and
// the next instant of s. A schedule without a cursor gets one at now; one
// that Apply added or re-timed has its cursor moved to the time of Apply,
// so that the change holds across restarts. Either is committed by the
// tick, with the instants due from there (usually none), in the batches of
// the other schedules' ticks: 10,000 new schedules are a few transactions,
// not 10,000. since holds the pass's restart marks; the one of s is
// dropped once it holds (see moved).
func (b *Beat) advance(cfg *Config, s *Schedule, cur store.Cursor, exists bool, since map[string]time.Time, now time.Time) (*tick, time.Time) {
	from := cur.At // where the commit finds the cursor; zero: it creates one
	mark, marked := since[s.Name]
	move := true
	switch {
	case !exists:
		cur = store.Cursor{Schedule: s.Name, At: now.Truncate(time.Second)}
	case marked && mark.After(cur.At):
		cur.At = mark
	default:
		move = false
		b.after[s.Name] = cur
		if marked {
			b.forget(s.Name, mark)
			delete(since, s.Name)
		}
	}
	t, next := b.materialise(cfg, s, cur, now)
	if !move {
		return t, next
	}
	if t == nil {
		t = &tick{s: s, cur: cur, to: cur.At, next: next, adv: store.Advance{Schedule: s.Name, To: cur.At, Paused: cur.Paused}}
	}
	t.adv.From = from
	t.moved = &moved{from: from, created: !exists}
	if marked {
		t.moved.mark = &mark
	}
	return t, next
}

// moved is the creation or restart of a schedule's cursor that a tick
// commits.
type moved struct {
	from    time.Time  // the cursor as read; zero when created
	created bool       // there was no cursor
	mark    *time.Time // the restart mark the tick honours, if any
}

// committedMove logs the creation or restart of the cursor that the
// committed tick t made and drops the restart mark it honoured from since
// and, unless Apply set a newer one, from the beat.
func (b *Beat) committedMove(ctx context.Context, t *tick, since map[string]time.Time) {
	m := t.moved
	if m.created {
		b.log.InfoContext(ctx, "schedule started", logKeySchedule, t.s.Name, logKeyCursor, t.cur.At)
	} else {
		b.log.InfoContext(ctx, "schedule restarted", logKeySchedule, t.s.Name, logKeyFrom, m.from, logKeyCursor, t.cur.At)
	}
	if m.mark != nil {
		b.forget(t.s.Name, *m.mark)
		delete(since, t.s.Name)
	}
}

// forget drops the restart mark of name unless Apply has set a newer one.
func (b *Beat) forget(name string, since time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.since[name].Equal(since) {
		delete(b.since, name)
	}
}

// tick is the part of one schedule in a pass: the Advance that commits its
// due instants, and what the log says of them once committed.
type tick struct {
	s         *Schedule
	cur       store.Cursor
	due       []instant
	truncated bool
	runs      []time.Time
	skips     []skipped
	to, next  time.Time
	adv       store.Advance
	moved     *moved // the cursor's creation or restart, if the tick commits one
}

// materialise plans the instants of s in (cursor, now]: the tick that
// commits them, or none when nothing is due, and the next instant.
func (b *Beat) materialise(cfg *Config, s *Schedule, cur store.Cursor, now time.Time) (*tick, time.Time) {
	after := cur.At
	if now.After(after) {
		after = now
	}
	if cur.Paused {
		return nil, s.spec.nextEvent(cur.At, after)
	}
	// The instants due first, then the next one: in this order the second
	// is the answer Spec.step has kept from the first.
	due, truncated := s.spec.between(cur.At, now, maxInstantsPerAdvance)
	next := s.spec.nextEvent(cur.At, after)
	if len(due) == 0 {
		return nil, next
	}
	// After a failed attempt the lateness is measured where it failed (see
	// Run): the beat's wait for the database is not charged to an instant.
	late := now
	if !b.lateFrom.IsZero() && b.lateFrom.Before(now) {
		late = b.lateFrom
	}
	runs, skips := planInstants(due, late, cfg.Scheduler.MisfireGrace, s.CatchUp, s.CatchUpLimit, reason(store.SkipMisfire), false)
	to := due[len(due)-1].at
	adv := buildAdvance(cfg, s, cur.At, to, runs, skips, now)
	return &tick{s: s, cur: cur, due: due, truncated: truncated, runs: runs, skips: skips, to: to, next: next, adv: adv}, next
}

// materialised logs what the committed tick t did; res are the results of
// its jobs.
func (b *Beat) materialised(ctx context.Context, t *tick, res []queue.Enqueued) {
	s, cur, due, truncated, runs, skips, to, next, adv := t.s, t.cur, t.due, t.truncated, t.runs, t.skips, t.to, t.next, t.adv
	overlaps := 0
	for _, r := range res {
		if r.Skipped {
			overlaps++
		}
	}
	b.report(s.Name, adv, res)
	if truncated {
		b.log.WarnContext(ctx, "missed instants passed over without a record",
			logKeySchedule, s.Name, logKeyFrom, cur.At, logKeyCursor, due[0].at)
	}
	lines := 0
	for _, sk := range adv.Skips {
		if lines++; lines > maxSkipLines {
			break
		}
		b.logSkip(ctx, s, sk.Item, sk.ScheduledAt, sk.Reason)
	}
	for i, r := range res {
		if r.Skipped {
			if lines++; lines > maxSkipLines {
				break
			}
			b.logSkip(ctx, s, adv.Jobs[i].Item, adv.Jobs[i].ScheduledAt, store.SkipOverlap)
		}
	}
	if len(skips) > 0 {
		b.log.InfoContext(ctx, "instants skipped",
			logKeySchedule, s.Name, logKeySkipped, len(skips), logKeyRuns, len(runs), logKeyCursor, to)
	}
	// The attributes below cost allocations per schedule and pass, for a
	// line that the default level drops.
	if !b.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	b.log.DebugContext(ctx, "instants materialised",
		logKeySchedule, s.Name, logKeyRuns, len(runs), logKeyJobs, len(adv.Jobs), logKeyOverlaps, overlaps,
		logKeyCursor, to, logKeyNextAt, next)
}

// report passes what the committed Advance adv did to the config's funcs.
func (b *Beat) report(name string, adv store.Advance, res []queue.Enqueued) {
	if f := b.materialisedFunc; f != nil {
		n := 0
		for _, r := range res {
			if r.Inserted && !r.Skipped {
				n++
			}
		}
		f(name, n)
	}
	if f := b.skippedFunc; f != nil {
		by := map[store.SkipReason]int{}
		for _, sk := range adv.Skips {
			by[sk.Reason]++
		}
		for _, r := range res {
			if r.Skipped {
				by[store.SkipOverlap]++
			}
		}
		for reason, n := range by {
			f(name, reason, n)
		}
	}
}

// logSkip logs one skipped run, the instant in the schedule's zone.
func (b *Beat) logSkip(ctx context.Context, s *Schedule, item string, at time.Time, reason store.SkipReason) {
	b.log.InfoContext(ctx, "run skipped", logKeySchedule, s.Name, logKeyItem, item,
		logKeyInstant, at.In(s.Location).Format(time.RFC3339), logKeyReason, reason)
}

// notePause logs a schedule's pause or resume, made by an operator command
// in another process, when the beat first sees it (a schedule paused when
// the beat starts is logged as paused).
func (b *Beat) notePause(ctx context.Context, s *Schedule, cur store.Cursor) {
	was, seen := b.paused[s.Name]
	b.paused[s.Name] = cur.Paused
	switch {
	case cur.Paused && !was:
		b.log.InfoContext(ctx, "schedule paused", logKeySchedule, s.Name, logKeyPausedAt, cur.PausedAt)
	case !cur.Paused && was && seen:
		b.log.InfoContext(ctx, "schedule resumed", logKeySchedule, s.Name, logKeyCursor, cur.At)
	}
}
