// Package scheduletest runs a schedules.toml's beat in a test, without a
// daemon: load the file (or a string), then Tick at the instants of your
// choice and see what each pass enqueued, skipped and alarmed, in a real
// queue (a SQLite file in t.TempDir(), or the PostgreSQL database or SQLite
// file that Config.DB names), with time moved by a clock.Fake.
//
//	b := scheduletest.Parse(t, `... [[schedule]] ...`, scheduletest.Config{})
//	tick := b.Tick(time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC))
//	// tick.Jobs: one job per fan-out item of each schedule due at 03:00
//
// Each Tick is the pass a daemon running since the previous Tick would make
// at its instant: instants since then are due, late ones go through the
// schedule's catch_up rule, and the alarms are judged after. Package
// queue/queuetest runs a handler on the jobs. ExampleBeat_Tick ticks a
// fan-out schedule; Example_alarmNotify raises a late alarm and runs its Go
// notify task on the notification; their _postgres twins do the same on
// PostgreSQL.
package scheduletest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/sqlite"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TB is the part of testing.TB the helpers use; *testing.T and *testing.B
// have it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// Config configures a Beat. Zero values select the defaults shown.
type Config struct {
	// Queue is where the passes write; its engine's clock must be Clock,
	// and it must hold no jobs but the passes'. Default: a queue on DB.
	Queue *queue.Client
	// DB is the database of the default queue, opened on Clock and closed
	// when the test ends: a postgres:// URL whose search_path names a
	// schema of the test's own (PostgreSQL decides with Clock as it is,
	// not the server's), or a SQLite file's path. Default: a SQLite file
	// in t.TempDir().
	DB string
	// Clock is the beat's clock; each Tick sets it to its instant. Default:
	// a new clock.Fake.
	Clock *clock.Fake
}

// Beat is a config's beat driven by hand, one pass per Tick.
type Beat struct {
	t     TB
	q     *queue.Client
	clk   *clock.Fake
	cfg   *config.Config
	beat  *schedule.Beat
	last  time.Time // the instant of the last Tick; zero before the first
	seen  map[string]bool
	alarm map[int64]bool
}

// Tick is what one pass wrote.
type Tick struct {
	At     time.Time
	Jobs   []*queue.Job  // the jobs it inserted, by id: instants' jobs, then alarms' notifications
	Skips  []store.Skip  // the instants it skipped, with their reasons
	Alarms []store.Alarm // the alarms it raised
}

// Load loads the schedules.toml at path (see config.Load) and returns its
// beat. A file that does not load fails t, with the loader's message.
func Load(t TB, path string, c Config) *Beat {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("load %s:\n%v", path, err)
	}
	return New(t, cfg, c)
}

// Parse is Load of a schedules.toml's text.
func Parse(t TB, text string, c Config) *Beat {
	t.Helper()
	cfg, err := config.Parse("schedules.toml", []byte(text))
	if err != nil {
		t.Fatalf("parse schedules.toml:\n%v", err)
	}
	return New(t, cfg, c)
}

// New returns the beat of a loaded config.
func New(t TB, cfg *config.Config, c Config) *Beat {
	t.Helper()
	if c.Clock == nil {
		c.Clock = clock.NewFake(time.Unix(0, 0).UTC())
	}
	if c.Queue == nil {
		c.Queue = openQueue(t, c.DB, c.Clock)
	}
	b, err := schedule.NewBeat(c.Queue, cfg, schedule.BeatConfig{Clock: c.Clock})
	if err != nil {
		t.Fatalf("new beat: %v", err)
	}
	return &Beat{t: t, q: c.Queue, clk: c.Clock, cfg: cfg, beat: b, seen: map[string]bool{}, alarm: map[int64]bool{}}
}

// openQueue opens the queue on db, a PostgreSQL URL or a SQLite file
// ("" for one in t.TempDir()), with clk, and closes it when the test ends.
func openQueue(t TB, db string, clk clock.Clock) *queue.Client {
	t.Helper()
	ctx := context.Background()
	if db == "" {
		db = filepath.Join(t.TempDir(), "jobs.db")
	}
	var e store.Engine
	var err error
	if engine.IsPostgres(db) {
		e, err = postgres.Open(ctx, db, postgres.Config{Clock: clk, LocalClock: true})
	} else {
		e, err = sqlite.Open(ctx, db, sqlite.Config{Clock: clk})
	}
	if err != nil {
		t.Fatalf("open queue: %v", err)
	}
	q, err := queue.New(e, queue.Config{})
	if err != nil {
		e.Close()
		t.Fatalf("open queue: %v", err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// Queue is the queue the passes write to, for reading jobs and running them.
func (b *Beat) Queue() *queue.Client { return b.q }

// Clock is the beat's clock.
func (b *Beat) Clock() *clock.Fake { return b.clk }

// Config is the loaded config.
func (b *Beat) Config() *config.Config { return b.cfg }

// Tick sets the clock to at and runs the beat's pass there, and returns what
// it wrote. The first Tick starts the schedules a second before at, as a
// daemon started then, so that an instant at at is due. Each Tick must be
// later than the one before; a failed pass fails t.
func (b *Beat) Tick(at time.Time) Tick {
	b.t.Helper()
	ctx := context.Background()
	if !b.last.IsZero() && !at.After(b.last) {
		b.t.Fatalf("tick at %s: not after the last tick, %s", at.Format(time.RFC3339), b.last.Format(time.RFC3339))
	}
	if b.last.IsZero() {
		b.clk.Set(at.Add(-time.Second))
		if err := b.beat.RunOnce(ctx); err != nil {
			b.t.Fatalf("start the schedules at %s: %v", b.clk.Now().Format(time.RFC3339), err)
		}
		b.record(ctx) // what starting wrote is not the tick's
	}
	b.last = at
	before := b.newestID(ctx)
	b.clk.Set(at)
	if err := b.beat.RunOnce(ctx); err != nil {
		b.t.Fatalf("tick at %s: %v", at.Format(time.RFC3339), err)
	}
	tick := Tick{At: at, Jobs: b.jobsAfter(ctx, before)}
	tick.Skips, tick.Alarms = b.record(ctx)
	return tick
}

// newestID is the id of the newest job, 0 when none.
func (b *Beat) newestID(ctx context.Context) int64 {
	b.t.Helper()
	js, err := b.q.List(ctx, queue.Filter{Limit: 1})
	if err != nil {
		b.t.Fatalf("list jobs: %v", err)
	}
	if len(js) == 0 {
		return 0
	}
	return js[0].ID
}

// jobsAfter returns the jobs whose id is above id, by id.
func (b *Beat) jobsAfter(ctx context.Context, id int64) []*queue.Job {
	b.t.Helper()
	var jobs []*queue.Job
	for page := int64(0); ; {
		js, err := b.q.List(ctx, queue.Filter{BeforeID: page, Limit: queue.MaxList})
		if err != nil {
			b.t.Fatalf("list jobs: %v", err)
		}
		for _, j := range js {
			if j.ID <= id {
				slices.Reverse(jobs)
				return jobs
			}
			jobs = append(jobs, j)
		}
		if len(js) < queue.MaxList {
			slices.Reverse(jobs)
			return jobs
		}
		page = js[len(js)-1].ID
	}
}

// record returns the skips and alarms not seen before, oldest first, and
// marks them seen.
func (b *Beat) record(ctx context.Context) ([]store.Skip, []store.Alarm) {
	b.t.Helper()
	skips, err := b.q.ListSkips(ctx, "", queue.MaxList)
	if err != nil {
		b.t.Fatalf("list skips: %v", err)
	}
	var newSkips []store.Skip
	for _, s := range slices.Backward(skips) {
		k := fmt.Sprintf("%s|%s|%d|%s", s.Schedule, s.Item, s.ScheduledAt.UnixMilli(), s.Reason)
		if !b.seen[k] {
			b.seen[k] = true
			newSkips = append(newSkips, s)
		}
	}
	alarms, err := b.q.Alarms(ctx, "", queue.MaxList)
	if err != nil {
		b.t.Fatalf("list alarms: %v", err)
	}
	var raised []store.Alarm
	for _, a := range slices.Backward(alarms) {
		if !b.alarm[a.ID] {
			b.alarm[a.ID] = true
			raised = append(raised, a)
		}
	}
	return newSkips, raised
}
