package schedule

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

var errDown = errors.New("database down")

// outageStore fails every read of the beat while down is set; Ping too
// unless pingable is set (the database answers, but a pass fails).
type outageStore struct {
	store.Engine
	down     atomic.Bool
	pingable bool
}

func (s *outageStore) Ping(ctx context.Context) error {
	if s.down.Load() && !s.pingable {
		return errDown
	}
	return s.Engine.Ping(ctx)
}

func (s *outageStore) CursorsByName(ctx context.Context, yield func(store.Cursor) bool) error {
	if s.down.Load() {
		return errDown
	}
	return s.Engine.CursorsByName(ctx, yield)
}

func (s *outageStore) Pools(ctx context.Context) ([]store.PoolRow, error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Engine.Pools(ctx)
}

// startOutageBeat runs a beat of cfg over an outageStore on a new queue
// file, with jitter as its jitter, and waits for its first pass.
func startOutageBeat(t *testing.T, cfg string, jitter func(time.Duration) time.Duration, pingable bool) (*beatRun, *outageStore, *queue.Client, *syncBuffer) {
	t.Helper()
	base, clk := newTestQueue(t)
	st := &outageStore{Engine: base.Engine(), pingable: pingable}
	q, _ := queue.New(st, queue.Config{})
	var logs syncBuffer
	r := startBeatWith(t, q, mustParse(t, cfg), BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil)), jitter: jitter})
	return r, st, q, &logs
}

// noCatchUp is due every minute, with the default grace of a minute, and
// runs no late instant: an instant is run only when on time.
const noCatchUp = `
[tasks.t]
[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
catch_up = "none"
`

// TestBeatComesBackWithTheDatabase: while the database does not answer,
// the beat pings it every second give or take half (here fixed at +0.4s
// by the jitter) and makes its pass as soon as it answers, not after a
// backoff; that pass measures lateness at the last ping that failed, so
// that the 12:01 instant, due as an outage shorter than misfire_grace
// began, runs although the pass comes more than the grace after it.
func TestBeatComesBackWithTheDatabase(t *testing.T) {
	t.Parallel()
	jitter := func(n time.Duration) time.Duration { return n * 9 / 10 } // every 1.4s
	r, st, q, logs := startOutageBeat(t, noCatchUp, jitter, false)
	st.down.Store(true) // from 12:00:00 on
	back := t0.Add(time.Minute + 59500*time.Millisecond)
	r.clk.Advance(time.Minute) // the beat's timer: the 12:01 pass fails
	got := r.settle()
	if !got.next.IsZero() || got.wait != 1400*time.Millisecond {
		t.Fatalf("after the failed pass: %+v; want a ping in 1.4s", got)
	}
	for r.clk.Now().Before(back) {
		r.clk.Advance(got.wait)
		if !r.clk.Now().Before(back) {
			st.down.Store(false)
		}
		got = r.settle()
		if got.wait != 1400*time.Millisecond && st.down.Load() {
			t.Fatalf("ping at %v waits %v, want 1.4s", got.now, got.wait)
		}
	}
	if lag := got.now.Sub(back); lag > 1500*time.Millisecond {
		t.Errorf("pass %v after the database answered, want within 1.5s", lag)
	}
	if late := got.now.Sub(t0.Add(time.Minute)); late <= time.Minute {
		t.Fatalf("the pass came %v after the instant: not past the grace, the test proves nothing", late)
	}
	if got, want := jobs(t, q, "s"), times(time.Minute, 2*time.Minute); !equal(got, want) {
		t.Errorf("jobs = %v, want %v (the instant the outage began with, and the one on time)", got, want)
	}
	if got := skips(t, q, "s"); len(got) != 0 {
		t.Errorf("skips = %v, want none", got)
	}
	if n := strings.Count(logs.String(), "beat pass failed"); n != 1 {
		t.Errorf("%d failed passes logged, want 1 (the pings are not passes):\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "database answers again") {
		t.Errorf("no line about the database answering again:\n%s", logs.String())
	}
}

// TestBeatOutageLongerThanGrace: an outage longer than misfire_grace
// passes instants over as downtime would: the pass after it measures at
// the last failed ping, more than the grace after the instant.
func TestBeatOutageLongerThanGrace(t *testing.T) {
	t.Parallel()
	jitter := func(n time.Duration) time.Duration { return n / 2 } // every second
	r, st, q, _ := startOutageBeat(t, noCatchUp, jitter, false)
	st.down.Store(true)
	r.clk.Advance(time.Minute) // the beat's timer: the 12:01 pass fails
	got := r.settle()
	back := t0.Add(2*time.Minute + 30*time.Second)
	for r.clk.Now().Before(back) {
		r.clk.Advance(got.wait)
		if !r.clk.Now().Before(back) {
			st.down.Store(false)
		}
		got = r.settle()
	}
	// 12:02 is 30s late at the last failed ping: on time; 12:01, 90s late,
	// is not and catch_up = "none" skips it.
	if got, want := jobs(t, q, "s"), times(2*time.Minute); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
	if got, want := skips(t, q, "s"), []string{"misfire " + label("", t0.Add(time.Minute))}; !equal(got, want) {
		t.Errorf("skips = %v, want %v", got, want)
	}
}

// TestBeatRetriesAfterError: a pass that fails while the database answers
// pings (a full disk, a bug) is retried after a delay that doubles from a
// second to MaxSleep, jittered within its upper half.
func TestBeatRetriesAfterError(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		jitter func(time.Duration) time.Duration
		want   []time.Duration
	}{
		{"top of the range", func(n time.Duration) time.Duration { return n - 1 },
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}},
		{"bottom of the range", func(time.Duration) time.Duration { return 0 },
			[]time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 15 * time.Second, 15 * time.Second}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, st, _, logs := startOutageBeat(t, minutely, tt.jitter, true)
			st.down.Store(true)
			r.clk.Advance(time.Minute) // the beat's timer: the 12:01 pass fails
			got := r.settle()
			var waits []time.Duration
			for range tt.want {
				waits = append(waits, got.wait)
				r.clk.Advance(got.wait)
				got = r.settle()
			}
			if strings.Join(durations(waits), " ") != strings.Join(durations(tt.want), " ") {
				t.Errorf("retry delays = %v, want %v", waits, tt.want)
			}
			if n := strings.Count(logs.String(), "beat pass failed"); n < len(tt.want) {
				t.Errorf("%d failed passes logged, want %d:\n%s", n, len(tt.want), logs.String())
			}
			st.down.Store(false)
			r.clk.Advance(got.wait)
			if got = r.settle(); !got.next.After(got.now) {
				t.Errorf("after the recovery: %+v, want a wait for the next instant", got)
			}
		})
	}
}

func durations(ds []time.Duration) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.String()
	}
	return out
}
