package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

const minutely = `
[tasks.t]
[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
`

const hourly = `
[tasks.t]
[[schedule]]
name = "s"
cron = "0 * * * *"
task = "t"
`

func TestBeatNewScheduleStartsFromNow(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	clk.Set(t0.Add(30 * time.Second))
	r := startBeat(t, q, mustParse(t, minutely), clk)

	if got, want := cursor(t, q, "s").At, t0.Add(30*time.Second); !got.Equal(want) {
		t.Errorf("cursor = %v, want %v", got, want)
	}
	if got := jobs(t, q, "s"); len(got) != 0 {
		t.Errorf("jobs after start = %v, want none", got)
	}
	idle := r.advance(30 * time.Second)
	if got, want := jobs(t, q, "s"), times(time.Minute); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
	if want := t0.Add(2 * time.Minute); !idle.next.Equal(want) {
		t.Errorf("beat waits for %v, want %v", idle.next, want)
	}
}

func TestBeatNewScheduleTruncatesToTheSecond(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	clk.Set(t0.Add(1500 * time.Millisecond))
	startBeat(t, q, mustParse(t, minutely), clk)
	if got, want := cursor(t, q, "s").At, t0.Add(time.Second); !got.Equal(want) {
		t.Errorf("cursor = %v, want %v", got, want)
	}
}

func TestBeatMaterialisesEachInstantOnce(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, minutely), clk)
	for range 5 {
		r.advance(time.Minute)
	}
	r.advance(0) // a pass with nothing due
	want := times(1*time.Minute, 2*time.Minute, 3*time.Minute, 4*time.Minute, 5*time.Minute)
	if got := jobs(t, q, "s"); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
	j, err := q.JobByKey(context.Background(), DedupKey("s", "", t0.Add(time.Minute)))
	if err != nil {
		t.Fatalf("Job by dedup key: %v", err)
	}
	if got, want := j.Key, "s||2026-03-01T12:01:00Z"; got != want {
		t.Errorf("key = %q, want %q", got, want)
	}
	if !j.RunAt.Equal(t0.Add(time.Minute)) || j.Type != "t" || j.MaxAttempts != config.DefaultMaxAttempts {
		t.Errorf("job = %+v, want run at 12:01, type t, %d attempts", j, config.DefaultMaxAttempts)
	}
	if got, want := cursor(t, q, "s").At, t0.Add(5*time.Minute); !got.Equal(want) {
		t.Errorf("cursor = %v, want %v", got, want)
	}
}

func TestBeatWakesWithinMaxSleep(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, hourly), clk)
	// Without Wake: only the beat's own timer, capped at MaxSleep, makes
	// the next pass.
	clk.BlockUntil(1)
	clk.Advance(DefaultMaxSleep)
	got := r.settle()
	if want := t0.Add(time.Hour); !got.next.Equal(want) {
		t.Errorf("next = %v, want %v", got.next, want)
	}
}

func TestBeatRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(t0)
	cfg := mustParse(t, minutely)

	q1 := openQueue(t, path, clk)
	r1 := startBeat(t, q1, cfg, clk)
	r1.advance(time.Minute)
	r1.advance(time.Minute)
	r1.stop()
	q1.Close()

	// A restart within the grace: the instant missed while down is on time.
	clk.Advance(50 * time.Second)
	q2 := openQueue(t, path, clk)
	r2 := startBeat(t, q2, cfg, clk)
	r2.advance(10 * time.Second)
	r2.advance(time.Minute)
	want := times(1*time.Minute, 2*time.Minute, 3*time.Minute, 4*time.Minute)
	if got := jobs(t, q2, "s"); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
	if got := skips(t, q2, "s"); len(got) != 0 {
		t.Errorf("skips = %v, want none", got)
	}
}

func TestBeatDowntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		catchUp   string
		down      time.Duration // from t0, with an hourly schedule
		wantJobs  []string
		wantSkips []string
	}{
		{
			name:      "latest runs the newest missed",
			catchUp:   `catch_up = "latest"`,
			down:      5*time.Hour + 30*time.Minute,
			wantJobs:  times(5 * time.Hour),
			wantSkips: []string{"misfire 13:00:00", "misfire 14:00:00", "misfire 15:00:00", "misfire 16:00:00"},
		},
		{
			name:      "latest defers to an on-time instant",
			catchUp:   "",
			down:      5*time.Hour + 30*time.Second,
			wantJobs:  times(5 * time.Hour),
			wantSkips: []string{"misfire 13:00:00", "misfire 14:00:00", "misfire 15:00:00", "misfire 16:00:00"},
		},
		{
			name:      "all runs each missed",
			catchUp:   `catch_up = "all"`,
			down:      3*time.Hour + 30*time.Minute,
			wantJobs:  times(1*time.Hour, 2*time.Hour, 3*time.Hour),
			wantSkips: nil,
		},
		{
			name:      "all runs the newest up to the limit",
			catchUp:   "catch_up = \"all\"\ncatch_up_limit = 2",
			down:      5*time.Hour + 30*time.Minute,
			wantJobs:  times(4*time.Hour, 5*time.Hour),
			wantSkips: []string{"misfire 13:00:00", "misfire 14:00:00", "misfire 15:00:00"},
		},
		{
			name:      "all with an on-time instant",
			catchUp:   "catch_up = \"all\"\ncatch_up_limit = 2",
			down:      5*time.Hour + 30*time.Second,
			wantJobs:  times(3*time.Hour, 4*time.Hour, 5*time.Hour),
			wantSkips: []string{"misfire 13:00:00", "misfire 14:00:00"},
		},
		{
			name:      "none skips every missed",
			catchUp:   `catch_up = "none"`,
			down:      3*time.Hour + 30*time.Minute,
			wantJobs:  nil,
			wantSkips: []string{"misfire 13:00:00", "misfire 14:00:00", "misfire 15:00:00"},
		},
		{
			name:      "none runs the on-time instant",
			catchUp:   `catch_up = "none"`,
			down:      3*time.Hour + 59*time.Second,
			wantJobs:  times(3 * time.Hour),
			wantSkips: []string{"misfire 13:00:00", "misfire 14:00:00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			cfg := mustParse(t, hourly+tt.catchUp+"\n")
			r := startBeat(t, q, cfg, clk)
			r.stop()

			clk.Advance(tt.down)
			startBeat(t, q, cfg, clk)
			if got := jobs(t, q, "s"); !equal(got, tt.wantJobs) {
				t.Errorf("jobs = %v, want %v", got, tt.wantJobs)
			}
			if got := skips(t, q, "s"); !equal(got, tt.wantSkips) {
				t.Errorf("skips = %v, want %v", got, tt.wantSkips)
			}
			// The cursor is at the newest instant: nothing is due again.
			if got, want := cursor(t, q, "s").At, t0.Add(tt.down).Truncate(time.Hour); !got.Equal(want) {
				t.Errorf("cursor = %v, want %v", got, want)
			}
		})
	}
}

func TestBeatClockJumpForward(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, hourly), clk)
	r.set(t0.Add(3*time.Hour + 10*time.Minute))
	if got, want := jobs(t, q, "s"), times(3*time.Hour); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
	if got, want := skips(t, q, "s"), []string{"misfire 13:00:00", "misfire 14:00:00"}; !equal(got, want) {
		t.Errorf("skips = %v, want %v", got, want)
	}
}

func TestBeatClockJumpBackward(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, hourly), clk)
	r.advance(time.Hour)
	r.advance(time.Hour)

	got := r.set(t0.Add(30 * time.Minute))
	if want := t0.Add(3 * time.Hour); !got.next.Equal(want) {
		t.Errorf("after jumping back the beat waits for %v, want %v", got.next, want)
	}
	if got, want := cursor(t, q, "s").At, t0.Add(2*time.Hour); !got.Equal(want) {
		t.Errorf("cursor = %v, want %v (never backwards)", got, want)
	}
	r.set(t0.Add(time.Hour)) // the clock passes 13:00 again
	r.set(t0.Add(2*time.Hour + 30*time.Minute))
	r.set(t0.Add(3 * time.Hour))
	if got, want := jobs(t, q, "s"), times(time.Hour, 2*time.Hour, 3*time.Hour); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
	if got := skips(t, q, "s"); len(got) != 0 {
		t.Errorf("skips = %v, want none", got)
	}
}

func TestBeatTwoBeatsOneFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(t0)
	cfg := mustParse(t, `
[tasks.t]
[[schedule]]
name = "fast"
cron = "*/10 * * * * *"
task = "t"
for_each = [ { n = 1 }, { n = 2 }, { n = 3 } ]
[[schedule]]
name = "slow"
cron = "* * * * *"
task = "t"
`)
	q1, q2 := openQueue(t, path, clk), openQueue(t, path, clk)
	r1 := startBeat(t, q1, cfg, clk)
	r2 := startBeat(t, q2, cfg, clk)
	const steps = 30
	for range steps {
		clk.Advance(10 * time.Second)
		r1.b.Wake()
		r2.b.Wake()
		r1.settle()
		r2.settle()
	}
	var want []string
	for i := 1; i <= steps; i++ {
		for n := 1; n <= 3; n++ {
			want = append(want, label(fmt.Sprintf("n=%d", n), t0.Add(time.Duration(i)*10*time.Second)))
		}
	}
	got := jobs(t, q1, "fast")
	sortLabels(got)
	sortLabels(want)
	if !equal(got, want) {
		t.Errorf("fast jobs = %v\nwant %v", got, want)
	}
	if got, want := jobs(t, q2, "slow"), times(time.Minute, 2*time.Minute, 3*time.Minute, 4*time.Minute, 5*time.Minute); !equal(got, want) {
		t.Errorf("slow jobs = %v, want %v", got, want)
	}
}

// TestBeatConcurrentPasses runs two beats' passes at the same instants
// side by side, many times, so that their Advances race.
func TestBeatConcurrentPasses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(t0)
	cfg := mustParse(t, minutely)
	var beats []*Beat
	for range 3 {
		b, err := NewBeat(openQueue(t, path, clk), cfg, BeatConfig{Clock: clk})
		if err != nil {
			t.Fatalf("NewBeat: %v", err)
		}
		beats = append(beats, b)
	}
	ctx := context.Background()
	const steps = 20
	for i := range steps + 1 {
		now := t0.Add(time.Duration(i) * time.Minute)
		var wg sync.WaitGroup
		errs := make([]error, len(beats))
		for k, b := range beats {
			wg.Go(func() { _, errs[k] = b.pass(ctx, now) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("pass at %v: %v", now, err)
			}
		}
	}
	var want []string
	for i := 1; i <= steps; i++ {
		want = append(want, label("", t0.Add(time.Duration(i)*time.Minute)))
	}
	if got := jobs(t, beats[0].q, "s"); !equal(got, want) {
		t.Errorf("jobs = %v\nwant %v", got, want)
	}
}

func TestNewBeatErrors(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	cfg := mustParse(t, minutely)
	tests := []struct {
		name string
		q    *queue.Client
		cfg  *config.Config
		bc   BeatConfig
	}{
		{"nil queue", nil, cfg, BeatConfig{}},
		{"nil config", q, nil, BeatConfig{}},
		{"negative sleep", q, cfg, BeatConfig{MaxSleep: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewBeat(tt.q, tt.cfg, tt.bc); err == nil {
				t.Errorf("NewBeat = nil error, want one")
			}
		})
	}
}

func TestBeatRunTwice(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, minutely), clk)
	if err := r.b.Run(context.Background()); err == nil {
		t.Errorf("second Run = nil error, want one")
	}
}

func TestBeatLongDowntimeIsBounded(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, "[tasks.t]\n[[schedule]]\nname = \"s\"\ncron = \"* * * * * *\"\ntask = \"t\"\ncatch_up = \"none\"\n")
	var logs syncBuffer
	r := startBeatWith(t, q, cfg, BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r.stop()
	clk.Advance(24 * time.Hour) // 86,400 instants missed
	r = startBeatWith(t, q, cfg, BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	// The newest maxInstantsPerAdvance instants are considered: the 61 of
	// the last minute run, the others are recorded as misfires.
	if got := len(jobs(t, q, "s")); got != 61 {
		t.Errorf("%d jobs, want 61", got)
	}
	if got := len(skips(t, q, "s")); got != maxInstantsPerAdvance-61 {
		t.Errorf("%d skips, want %d", got, maxInstantsPerAdvance-61)
	}
	if got, want := cursor(t, q, "s").At, t0.Add(24*time.Hour); !got.Equal(want) {
		t.Errorf("cursor = %v, want %v", got, want)
	}
	if !strings.Contains(logs.String(), "missed instants passed over without a record") {
		t.Errorf("no warning about unrecorded instants in log:\n%s", logs.String())
	}
}

// TestBeatProbeNeedsTheLoop: a sleeping beat answers a probe at once; a
// beat stuck in its loop answers none until it comes round again.
func TestBeatProbeNeedsTheLoop(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	b, err := NewBeat(q, mustParse(t, hourly), BeatConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	wedged, unwedge := make(chan struct{}), make(chan struct{})
	passes := 0
	b.idleFunc = func(now, next time.Time, _ time.Duration) {
		if passes++; passes == 2 {
			close(wedged)
			<-unwedge
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); waitFor(t, done) }()
	waitFor(t, b.Probe())
	b.Wake()
	waitFor(t, wedged)
	probe := b.Probe()
	select {
	case <-probe:
		t.Fatal("a stuck beat answered a probe")
	default:
	}
	close(unwedge)
	waitFor(t, probe)
}
