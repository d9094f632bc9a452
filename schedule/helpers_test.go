package schedule

import (
	"bytes"
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// t0 is the fake clock's start: Sunday 1 March 2026, 12:00 UTC.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("time.Parse(%q): %v", s, err)
	}
	return v
}

// newTestQueue opens a queue on a fresh file in t.TempDir() with a fake
// clock set to t0.
func newTestQueue(t testing.TB) (*queue.Client, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	return openQueue(t, filepath.Join(t.TempDir(), "q.db"), clk), clk
}

// openQueue opens the queue file at path; it is closed when the test ends.
func openQueue(t testing.TB, path string, clk clock.Clock) *queue.Client {
	t.Helper()
	q, err := engine.Open(context.Background(), path, engine.Config{Clock: clk})
	if err != nil {
		t.Fatalf("queue.Open: %v", err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// mustParse parses a configuration that must be valid.
func mustParse(t testing.TB, text string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.toml", []byte(text))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return cfg
}

// waitFor returns the next value from ch, failing the test after a deadline
// that is a failure bound, not a synchronisation point.
func waitFor[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(3 * time.Minute): // failure deadline, not a sync point
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}

// idle is what the beat reports each time its loop is about to wait.
type idle struct {
	now, next time.Time
	wait      time.Duration
}

// beatRun is a Beat running in the background, driven by a fake clock.
type beatRun struct {
	t    testing.TB
	b    *Beat
	clk  *clock.Fake
	idle chan idle
	stop func()
}

// startBeat runs a Beat on q until the test ends or stop is called, and
// waits for its first pass.
func startBeat(t testing.TB, q *queue.Client, cfg *config.Config, clk *clock.Fake) *beatRun {
	t.Helper()
	return startBeatWith(t, q, cfg, BeatConfig{Clock: clk})
}

// startBeatWith is startBeat with a BeatConfig, whose Clock must be a
// *clock.Fake.
func startBeatWith(t testing.TB, q *queue.Client, cfg *config.Config, bc BeatConfig) *beatRun {
	t.Helper()
	clk := bc.Clock.(*clock.Fake)
	b, err := NewBeat(q, cfg, bc)
	if err != nil {
		t.Fatalf("NewBeat: %v", err)
	}
	r := &beatRun{t: t, b: b, clk: clk, idle: make(chan idle)}
	ctx, cancel := context.WithCancel(context.Background())
	b.idleFunc = func(now, next time.Time, wait time.Duration) {
		select {
		case r.idle <- idle{now, next, wait}:
		case <-ctx.Done():
		}
	}
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := waitFor(t, done); err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(r.stop)
	r.settle()
	return r
}

// settle waits until the beat has run a pass at the clock's current time
// and waits.
func (r *beatRun) settle() idle {
	r.t.Helper()
	now := r.clk.Now()
	for {
		got := waitFor(r.t, r.idle)
		if got.now.Equal(now) {
			return got
		}
	}
}

// advance moves the clock by d and waits for the pass at the new time. The
// beat is woken as well, in case d ends before its timer.
func (r *beatRun) advance(d time.Duration) idle {
	r.t.Helper()
	r.clk.Advance(d)
	r.b.Wake()
	return r.settle()
}

// set moves the clock to at, forwards or backwards, and waits for the pass
// at at.
func (r *beatRun) set(at time.Time) idle {
	r.t.Helper()
	r.clk.Set(at)
	r.b.Wake()
	return r.settle()
}

// jobs returns the instants of the jobs of schedule, oldest first, as
// "item@15:04:05" (item omitted when empty).
func jobs(t testing.TB, q *queue.Client, schedule string) []string {
	t.Helper()
	js, err := q.ScheduleJobs(context.Background(), schedule, 1000000)
	if err != nil {
		t.Fatalf("ScheduleJobs: %v", err)
	}
	out := make([]string, 0, len(js))
	for _, j := range js {
		out = append(out, label(j.Item, j.ScheduledAt))
	}
	slices.Reverse(out)
	return out
}

// skips returns the skips of schedule, oldest first, as
// "reason item@15:04:05".
func skips(t testing.TB, q *queue.Client, schedule string) []string {
	t.Helper()
	var ss []store.Skip
	for _, reason := range []store.SkipReason{store.SkipMisfire, store.SkipOverlap, store.SkipPaused, store.SkipDST} {
		rs, err := q.SkipsBetween(context.Background(), schedule, reason, time.Time{}, time.Unix(1<<40, 0), store.MaxAlarmRows)
		if err != nil {
			t.Fatalf("SkipsBetween: %v", err)
		}
		ss = append(ss, rs...)
	}
	// Oldest first, and the items of an instant in reverse order.
	slices.SortStableFunc(ss, func(a, b store.Skip) int {
		return cmp.Or(a.ScheduledAt.Compare(b.ScheduledAt), strings.Compare(b.Item, a.Item))
	})
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, string(s.Reason)+" "+label(s.Item, s.ScheduledAt))
	}
	return out
}

func label(item string, at time.Time) string {
	l := at.UTC().Format("15:04:05")
	if item != "" {
		l = item + "@" + l
	}
	return l
}

// cursor returns the cursor of schedule.
func cursor(t testing.TB, q *queue.Client, schedule string) store.Cursor {
	t.Helper()
	cs, err := q.Cursors(context.Background())
	if err != nil {
		t.Fatalf("Cursors: %v", err)
	}
	return cs[schedule]
}

// times formats offsets from t0 as labels, for expected values.
func times(offsets ...time.Duration) []string {
	out := make([]string, len(offsets))
	for i, d := range offsets {
		out[i] = label("", t0.Add(d))
	}
	return out
}

// sortLabels sorts labels, for results whose order does not matter.
func sortLabels(s []string) { slices.Sort(s) }

func equal(got, want []string) bool {
	return strings.Join(got, "\n") == strings.Join(want, "\n")
}

// syncBuffer is a bytes.Buffer safe for a logger writing from the beat's
// goroutine while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
