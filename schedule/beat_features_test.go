package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule/config"
)

func TestBeatPauseResume(t *testing.T) {
	t.Parallel()
	// Hourly from 12:00; paused after 13:00; 14:00, 15:00 and 16:00 pass;
	// resumed late after 16:00; then 17:00.
	tests := []struct {
		name       string
		skipMissed bool
		catchUp    string
		late       time.Duration
		wantJobs   []string
		wantSkips  []string
	}{
		{
			name:      "catch up latest",
			late:      20 * time.Minute,
			wantJobs:  times(time.Hour, 4*time.Hour, 5*time.Hour),
			wantSkips: []string{"paused 14:00:00", "paused 15:00:00"},
		},
		{
			name:      "catch up latest with an on-time instant",
			late:      20 * time.Second,
			wantJobs:  times(time.Hour, 4*time.Hour, 5*time.Hour),
			wantSkips: []string{"paused 14:00:00", "paused 15:00:00"},
		},
		{
			name:      "catch up none",
			catchUp:   `catch_up = "none"`,
			late:      20 * time.Minute,
			wantJobs:  times(time.Hour, 5*time.Hour),
			wantSkips: []string{"paused 14:00:00", "paused 15:00:00", "paused 16:00:00"},
		},
		{
			name:      "catch up all",
			catchUp:   `catch_up = "all"`,
			late:      20 * time.Minute,
			wantJobs:  times(time.Hour, 2*time.Hour, 3*time.Hour, 4*time.Hour, 5*time.Hour),
			wantSkips: nil,
		},
		{
			name:       "skip missed",
			skipMissed: true,
			late:       20 * time.Second,
			wantJobs:   times(time.Hour, 5*time.Hour),
			wantSkips:  []string{"paused 14:00:00", "paused 15:00:00", "paused 16:00:00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			cfg := mustParse(t, hourly+tt.catchUp+"\n")
			r := startBeat(t, q, cfg, clk)
			r.advance(time.Hour)
			ctx := context.Background()
			if err := Pause(ctx, q, cfg, "s"); err != nil {
				t.Fatalf("Pause: %v", err)
			}
			for range 3 {
				r.advance(time.Hour)
			}
			// A restarted beat respects the durable pause too.
			r.stop()
			r = startBeat(t, q, cfg, clk)
			r.advance(tt.late)
			if got, want := jobs(t, q, "s"), times(time.Hour); !equal(got, want) {
				t.Fatalf("jobs while paused = %v, want %v", got, want)
			}
			if c := cursor(t, q, "s"); !c.Paused || !c.At.Equal(t0.Add(time.Hour)) {
				t.Errorf("cursor while paused = %+v, want paused at 13:00", c)
			}
			if err := Resume(ctx, q, cfg, "s", clk.Now(), tt.skipMissed); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if err := Resume(ctx, q, cfg, "s", clk.Now(), tt.skipMissed); err != nil {
				t.Fatalf("Resume again: %v", err)
			}
			r.advance(0)
			r.advance(time.Hour - tt.late)
			if got := jobs(t, q, "s"); !equal(got, tt.wantJobs) {
				t.Errorf("jobs = %v, want %v", got, tt.wantJobs)
			}
			if got := skips(t, q, "s"); !equal(got, tt.wantSkips) {
				t.Errorf("skips = %v, want %v", got, tt.wantSkips)
			}
			if c := cursor(t, q, "s"); c.Paused {
				t.Errorf("cursor %+v still paused", c)
			}
		})
	}
}

func TestBeatOverlap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		overlap   string
		wantJobs  []string
		wantSkips []string
	}{
		{"skip", []string{"n=1@12:01:00", "n=2@12:01:00"}, []string{"overlap n=1@12:02:00", "overlap n=2@12:02:00", "overlap n=1@12:03:00", "overlap n=2@12:03:00"}},
		{"allow", []string{"n=1@12:01:00", "n=1@12:02:00", "n=1@12:03:00", "n=2@12:01:00", "n=2@12:02:00", "n=2@12:03:00"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.overlap, func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			r := startBeat(t, q, mustParse(t, `
[tasks.t]
[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
for_each = [ { n = 1 }, { n = 2 } ]
overlap = "`+tt.overlap+`"
`), clk)
			// No pool runs: the first jobs stay pending.
			for range 3 {
				r.advance(time.Minute)
			}
			got := jobs(t, q, "s")
			sortLabels(got)
			if !equal(got, tt.wantJobs) {
				t.Errorf("jobs = %v, want %v", got, tt.wantJobs)
			}
			gotSkips := skips(t, q, "s")
			wantSkips := append([]string(nil), tt.wantSkips...)
			sortLabels(gotSkips)
			sortLabels(wantSkips)
			if !equal(gotSkips, wantSkips) {
				t.Errorf("skips = %v, want %v", gotSkips, wantSkips)
			}
		})
	}
}

func TestBeatOverlapAfterDone(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, minutely+`overlap = "skip"`+"\n"), clk)
	r.advance(time.Minute)
	j, err := q.JobByKey(context.Background(), DedupKey("s", "", t0.Add(time.Minute)))
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	if _, err := q.RequestCancel(context.Background(), j.ID, "test"); err != nil {
		t.Fatalf("RequestCancel: %v", err)
	}
	r.advance(time.Minute)
	if got, want := jobs(t, q, "s"), times(time.Minute, 2*time.Minute); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
}

func TestBeatFanOut1000(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[tasks.t]\ncommand = [\"echo\", \"{{.customer}}\", \"{{.format}}\"]\n")
	b.WriteString("[[schedule]]\nname = \"s\"\ncron = \"* * * * *\"\ntask = \"t\"\npayload = { format = \"pdf\", customer = \"none\" }\nfor_each = [\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  { customer = \"c%04d\" },\n", i)
	}
	b.WriteString("]\n")
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, b.String()), clk)
	r.advance(time.Minute)

	js, err := q.ScheduleJobs(context.Background(), "s", 5000)
	if err != nil {
		t.Fatalf("ScheduleJobs: %v", err)
	}
	if len(js) != 1000 {
		t.Fatalf("%d jobs, want 1000", len(js))
	}
	seen := map[string]bool{}
	for _, j := range js {
		var p map[string]string
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			t.Fatalf("payload %s: %v", j.Payload, err)
		}
		if want := "customer=" + p["customer"]; j.Item != want || p["format"] != "pdf" {
			t.Fatalf("job item %q payload %s, want item %q and format pdf", j.Item, j.Payload, want)
		}
		if want := DedupKey("s", j.Item, t0.Add(time.Minute)); j.Key != want {
			t.Fatalf("key %q, want %q", j.Key, want)
		}
		seen[j.Item] = true
	}
	if len(seen) != 1000 {
		t.Errorf("%d distinct items, want 1000", len(seen))
	}
}

func TestBeatApply(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	r := startBeat(t, q, mustParse(t, `
[tasks.t]
[[schedule]]
name = "keep"
cron = "*/10 * * * *"
task = "t"
[[schedule]]
name = "change"
cron = "0 * * * *"
task = "t"
catch_up = "all"
[[schedule]]
name = "remove"
cron = "* * * * *"
task = "t"
`), clk)
	for range 10 {
		r.advance(time.Minute)
	}

	next := mustParse(t, `
[tasks.t]
[[schedule]]
name = "keep"
cron = "*/10 * * * *"
task = "t"
[[schedule]]
name = "change"
cron = "*/5 * * * *"
task = "t"
catch_up = "all"
[[schedule]]
name = "add"
cron = "* * * * *"
task = "t"
`)
	clk.Advance(2*time.Minute + 30*time.Second) // 12:12:30: 12:05 and 12:10 of the new spec are past
	d := r.b.Apply(next)
	want := config.Diff{Added: []string{"add"}, Changed: []string{"change"}, Removed: []string{"remove"}, Fields: map[string][]string{"change": {"cron"}}}
	if fmt.Sprint(d) != fmt.Sprint(want) {
		t.Errorf("Apply = %+v, want %+v", d, want)
	}
	r.settle()
	r.advance(30 * time.Second) // 12:13
	for range 7 {               // to 12:20
		r.advance(time.Minute)
	}

	if got, want := jobs(t, q, "change"), times(15*time.Minute, 20*time.Minute); !equal(got, want) {
		t.Errorf("changed jobs = %v, want %v", got, want)
	}
	if got := skips(t, q, "change"); len(got) != 0 {
		t.Errorf("changed skips = %v, want none", got)
	}
	if got, want := jobs(t, q, "keep"), times(10*time.Minute, 20*time.Minute); !equal(got, want) {
		t.Errorf("kept jobs = %v, want %v", got, want)
	}
	wantRemove := times(1*time.Minute, 2*time.Minute, 3*time.Minute, 4*time.Minute, 5*time.Minute,
		6*time.Minute, 7*time.Minute, 8*time.Minute, 9*time.Minute, 10*time.Minute)
	if got := jobs(t, q, "remove"); !equal(got, wantRemove) {
		t.Errorf("removed jobs = %v, want %v", got, wantRemove)
	}
	wantAdd := times(13*time.Minute, 14*time.Minute, 15*time.Minute)
	for m := 16; m <= 20; m++ {
		wantAdd = append(wantAdd, label("", t0.Add(time.Duration(m)*time.Minute)))
	}
	if got := jobs(t, q, "add"); !equal(got, wantAdd) {
		t.Errorf("added jobs = %v, want %v", got, wantAdd)
	}
	if r.b.Config() != next {
		t.Errorf("Config() is not the applied configuration")
	}
	if d := r.b.Apply(nil); !d.Empty() || r.b.Config() != next {
		t.Errorf("Apply(nil) = %+v and replaced the configuration", d)
	}
}

func TestBeatReaddedScheduleStartsFromNow(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, hourly+`catch_up = "all"`+"\n")
	r := startBeat(t, q, cfg, clk)
	r.advance(time.Hour)
	r.b.Apply(mustParse(t, "[tasks.t]\n"))
	r.settle()
	r.advance(3 * time.Hour)
	r.b.Apply(cfg)
	r.settle()
	r.advance(time.Hour)
	if got, want := jobs(t, q, "s"), times(time.Hour, 5*time.Hour); !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
}

func TestBeatDST(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		cron      string
		start     string
		steps     int // hours advanced
		wantJobs  []string
		wantSkips []string
	}{
		{"fall-back daily runs once", "30 1 * * *", "2026-11-01T00:00:00-04:00", 4,
			[]string{"05:30:00"}, []string{"dst 06:30:00"}},
		{"fall-back hourly runs both", "0 * * * *", "2026-11-01T00:00:00-04:00", 4,
			[]string{"05:00:00", "06:00:00", "07:00:00", "08:00:00"}, nil},
		{"spring-forward daily runs at the jump", "30 2 * * *", "2026-03-08T00:00:00-05:00", 4,
			[]string{"07:00:00"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			clk.Set(mustTime(t, tt.start))
			r := startBeat(t, q, mustParse(t, `
[scheduler]
timezone = "America/New_York"
[tasks.t]
[[schedule]]
name = "s"
cron = "`+tt.cron+`"
task = "t"
`), clk)
			for range tt.steps {
				r.advance(time.Hour)
			}
			if got := jobs(t, q, "s"); !equal(got, tt.wantJobs) {
				t.Errorf("jobs = %v, want %v", got, tt.wantJobs)
			}
			if got := skips(t, q, "s"); !equal(got, tt.wantSkips) {
				t.Errorf("skips = %v, want %v", got, tt.wantSkips)
			}
		})
	}
}

func TestBeatEveryAnchoredToCursor(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "q.db")
	clk := clock.NewFake(t0.Add(7 * time.Second))
	cfg := mustParse(t, "[tasks.t]\n[[schedule]]\nname = \"s\"\ncron = \"@every 90s\"\ntask = \"t\"\ncatch_up = \"all\"\n")
	q := openQueue(t, path, clk)
	r := startBeat(t, q, cfg, clk)
	r.advance(90 * time.Second)
	r.stop()
	// Down for a while; the series stays on the cursor's grid.
	clk.Advance(4 * time.Minute)
	r = startBeat(t, q, cfg, clk)
	got := r.advance(0)
	want := times(97*time.Second, 187*time.Second, 277*time.Second)
	if g := jobs(t, q, "s"); !equal(g, want) {
		t.Errorf("jobs = %v, want %v", g, want)
	}
	if w := t0.Add(367 * time.Second); !got.next.Equal(w) {
		t.Errorf("next = %v, want %v", got.next, w)
	}
}

// TestBeatLogsSkipsAndPauses: each skipped run is logged with its schedule,
// item, instant in the schedule's zone and reason; a pause and a resume made
// by another process are logged once, when the beat sees them.
func TestBeatLogsSkipsAndPauses(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, "[tasks.t]\n[[schedule]]\nname = \"s\"\ncron = \"0 * * * *\"\ntimezone = \"Asia/Tokyo\"\ntask = \"t\"\ncatch_up = \"none\"\n")
	var logs syncBuffer
	r := startBeatWith(t, q, cfg, BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	r.stop()
	clk.Advance(2*time.Hour + 30*time.Minute) // 13:00 and 14:00 missed
	r = startBeatWith(t, q, cfg, BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, at := range []string{"2026-03-01T22:00:00+09:00", "2026-03-01T23:00:00+09:00"} {
		want := `msg="run skipped" component=beat schedule=s item="" instant=` + at + " reason=misfire"
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	ctx := context.Background()
	if err := Pause(ctx, q, cfg, "s"); err != nil {
		t.Fatal(err)
	}
	r.advance(0)
	if err := Resume(ctx, q, cfg, "s", clk.Now(), true); err != nil {
		t.Fatal(err)
	}
	r.advance(0)
	for _, msg := range []string{`msg="schedule paused" component=beat schedule=s`, `msg="schedule resumed" component=beat schedule=s`} {
		if n := strings.Count(logs.String(), msg); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", msg, n, logs.String())
		}
	}
}

// TestBeatSumsUpManyStarts: a pass that creates many cursors logs
// "schedule started" for the first few only, at info, then one line with
// how many started and the first run due among them.
func TestBeatSumsUpManyStarts(t *testing.T) {
	t.Parallel()
	for _, n := range []int{maxStartedLines, 25} {
		q, clk := newTestQueue(t)
		cfg := mustParse(t, manySchedules(n, func(i int) int { return i }))
		var logs syncBuffer
		b, err := NewBeat(q, cfg, BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.pass(context.Background(), clk.Now()); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(logs.String(), `msg="schedule started"`); got != maxStartedLines {
			t.Errorf("%d schedules: %d \"schedule started\" lines, want %d:\n%s", n, got, maxStartedLines, logs.String())
		}
		first := cfg.Schedules[0].Next(clk.Now()).Format("2006-01-02T15:04:05.000Z07:00")
		want := fmt.Sprintf(`msg="schedules started" component=beat started=%d logged=%d first_run=%s`, n, maxStartedLines, first)
		if got := strings.Contains(logs.String(), want); got != (n > maxStartedLines) {
			t.Errorf("%d schedules: summary %q logged: %v, want %v:\n%s", n, want, got, !got, logs.String())
		}
	}
}
