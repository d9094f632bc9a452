package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

const fanOut = `
[tasks.t]
priority = 3
max_attempts = 2
[[schedule]]
name = "s"
cron = "0 * * * *"
task = "t"
payload = { format = "pdf", n = 1 }
for_each = [ { customer = "acme" }, { customer = "globex" } ]
`

func TestTrigger(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, fanOut)
	ctx := context.Background()

	res, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Key: "deploy-42", Now: clk.Now(), Payload: json.RawMessage(`{"format":"csv","n":12345678901234567890}`)})
	if err != nil {
		t.Fatalf("Trigger: %v", err)
	}
	if len(res) != 2 || !res[0].Inserted || !res[1].Inserted {
		t.Fatalf("Trigger = %+v, want 2 inserted", res)
	}
	j, err := q.JobByKey(ctx, "s|customer=acme|manual|deploy-42")
	if err != nil {
		t.Fatalf("Job: %v", err)
	}
	if got, want := string(j.Payload), `{"customer":"acme","format":"csv","n":12345678901234567890}`; got != want {
		t.Errorf("payload = %s, want %s", got, want)
	}
	if j.Priority != 3 || j.MaxAttempts != 2 || j.Schedule != "s" || j.Item != "customer=acme" || !j.ScheduledAt.IsZero() || !j.RunAt.Equal(t0) {
		t.Errorf("job = %+v", j)
	}

	again, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Key: "deploy-42", Now: clk.Now().Add(time.Minute)})
	if err != nil {
		t.Fatalf("Trigger again: %v", err)
	}
	if again[0].Inserted || again[1].Inserted || again[0].ID != res[0].ID {
		t.Errorf("Trigger with the same key = %+v, want nothing inserted", again)
	}

	a, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Now: clk.Now()})
	if err != nil {
		t.Fatalf("Trigger without key: %v", err)
	}
	b, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Now: clk.Now()})
	if err != nil {
		t.Fatalf("Trigger without key: %v", err)
	}
	if !a[0].Inserted || !b[0].Inserted || a[0].Key == b[0].Key || !strings.HasPrefix(a[0].Key, "s|customer=acme|manual|") {
		t.Errorf("Triggers without key = %+v and %+v, want two fresh jobs", a, b)
	}
	if got := len(jobs(t, q, "s")); got != 6 {
		t.Errorf("%d jobs, want 6", got)
	}
}

func TestTriggerErrors(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, fanOut)
	tests := []struct {
		name     string
		schedule string
		opts     TriggerOptions
		want     string
	}{
		{"unknown schedule", "nope", TriggerOptions{Now: clk.Now()}, "unknown schedule"},
		{"no time", "s", TriggerOptions{}, "no time given"},
		{"payload not an object", "s", TriggerOptions{Now: clk.Now(), Payload: json.RawMessage(`[1]`)}, "json object"},
		{"payload with trailing data", "s", TriggerOptions{Now: clk.Now(), Payload: json.RawMessage(`{} {}`)}, "data after the object"},
		{"null payload", "s", TriggerOptions{Now: clk.Now(), Payload: json.RawMessage(`null`)}, "got null"},
		{"payload sets an item key", "s", TriggerOptions{Now: clk.Now(), Payload: json.RawMessage(`{"customer": 42}`)}, `for_each key "customer"`},
		{"payload sets the chosen item's key", "s", TriggerOptions{Now: clk.Now(), Item: "globex", Payload: json.RawMessage(`{"customer": "initech"}`)}, `for_each key "customer" of item customer=globex`},
		{"unknown item", "s", TriggerOptions{Now: clk.Now(), Item: "initech"}, `unknown item "initech" (have: customer=acme; customer=globex)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Trigger(context.Background(), q, cfg, tt.schedule, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Trigger = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := Trigger(context.Background(), q, cfg, "nope", TriggerOptions{Now: clk.Now()}); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("Trigger(nope) = %v, want ErrUnknownSchedule", err)
	}
	if err := CheckTrigger(cfg, "s", TriggerOptions{Now: clk.Now(), Item: "x"}); !errors.Is(err, ErrUnknownItem) {
		t.Errorf("CheckTrigger(item x) = %v, want ErrUnknownItem", err)
	}
	if err := CheckTrigger(cfg, "s", TriggerOptions{Now: clk.Now(), Payload: json.RawMessage(`{"customer": 42}`)}); !errors.Is(err, ErrPayloadSetsItemKey) {
		t.Errorf("CheckTrigger(payload customer) = %v, want ErrPayloadSetsItemKey", err)
	}
	if got := len(jobs(t, q, "s")); got != 0 {
		t.Errorf("rejected triggers enqueued %d jobs", got)
	}
}

// TestTriggerItem: -item runs one fan-out item, named by its id or by a
// value no other item shares; the payload may still set the schedule's own
// keys.
func TestTriggerItem(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, `
[tasks.t]
[[schedule]]
name = "s"
cron = "0 * * * *"
task = "t"
payload = { format = "pdf" }
for_each = [ { customer = "acme", tier = 1 }, { customer = "globex", tier = 1 }, { customer = "initech", tier = 2 } ]
`)
	ctx := context.Background()
	for _, tt := range []struct{ item, want string }{
		{"globex", "customer=globex,tier=1"},
		{"customer=acme,tier=1", "customer=acme,tier=1"},
		{"2", "customer=initech,tier=2"},
	} {
		res, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Now: clk.Now(), Item: tt.item, Payload: json.RawMessage(`{"format":"csv"}`)})
		if err != nil {
			t.Fatalf("Trigger(item %s): %v", tt.item, err)
		}
		if len(res) != 1 || !strings.HasPrefix(res[0].Key, "s|"+tt.want+"|manual|") {
			t.Errorf("Trigger(item %s) = %+v, want one job of item %s", tt.item, res, tt.want)
		}
	}
	if _, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Now: clk.Now(), Item: "1"}); !errors.Is(err, ErrUnknownItem) || !strings.Contains(err.Error(), "several items") {
		t.Errorf("Trigger(item 1) = %v, want ErrUnknownItem naming several items", err)
	}
}

func TestNextN(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
[tasks.t]
[[schedule]]
name = "ny"
cron = "30 1 * * *"
timezone = "America/New_York"
task = "t"
[[schedule]]
name = "every"
cron = "@every 45m"
task = "t"
`)
	tests := []struct {
		name string
		from string
		n    int
		want []string
	}{
		{"ny", "2026-10-31T00:00:00-04:00", 3, []string{"2026-10-31T01:30:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"every", "2026-03-01T12:00:00Z", 2, []string{"2026-03-01T12:45:00Z", "2026-03-01T13:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := NextN(cfg, tt.name, mustTime(t, tt.from), tt.n)
			if err != nil {
				t.Fatalf("NextN: %v", err)
			}
			var gotS []string
			for _, g := range got {
				gotS = append(gotS, g.Format(time.RFC3339))
			}
			if !equal(gotS, tt.want) {
				t.Errorf("NextN = %v, want %v", gotS, tt.want)
			}
		})
	}
	for _, n := range []int{0, -1, MaxNextN + 1} {
		if _, err := NextN(cfg, "ny", t0, n); err == nil {
			t.Errorf("NextN(n=%d) = nil error", n)
		}
	}
	if _, err := NextN(cfg, "nope", t0, 1); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("NextN(nope) = %v, want ErrUnknownSchedule", err)
	}
}

func TestBackfill(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, fanOut)
	ctx := context.Background()
	r := startBeat(t, q, cfg, clk)
	r.advance(time.Hour) // the beat makes 13:00

	from, to := t0.Add(-2*time.Hour), t0.Add(time.Hour)
	res, err := Backfill(ctx, q, cfg, "s", from, to)
	if err != nil {
		t.Fatalf("Backfill: %v", err)
	}
	inserted := 0
	for _, e := range res {
		if e.Inserted {
			inserted++
		}
	}
	if len(res) != 8 || inserted != 6 {
		t.Errorf("Backfill = %d results, %d inserted; want 8, 6 (13:00 exists)", len(res), inserted)
	}
	again, err := Backfill(ctx, q, cfg, "s", from, to)
	if err != nil {
		t.Fatalf("Backfill again: %v", err)
	}
	for _, e := range again {
		if e.Inserted {
			t.Errorf("Backfill again inserted %s", e.Key)
		}
	}
	want := []string{}
	for _, h := range []time.Duration{-2 * time.Hour, -time.Hour, 0, time.Hour} {
		for _, c := range []string{"acme", "globex"} {
			want = append(want, label("customer="+c, t0.Add(h)))
		}
	}
	got := jobs(t, q, "s")
	sortLabels(got)
	sortLabels(want)
	if !equal(got, want) {
		t.Errorf("jobs = %v, want %v", got, want)
	}
	if c := cursor(t, q, "s"); !c.At.Equal(t0.Add(time.Hour)) {
		t.Errorf("cursor = %v, want unchanged 13:00", c.At)
	}
}

func TestBackfillLimits(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	cfg := mustParse(t, `
[tasks.t]
[[schedule]]
name = "s"
cron = "* * * * * *"
task = "t"
[[schedule]]
name = "every"
cron = "@every 1h"
task = "t"
`)
	ctx := context.Background()
	if _, err := Backfill(ctx, q, cfg, "s", t0, t0.Add(3*time.Hour)); err == nil || !strings.Contains(err.Error(), "more than 10000 instants") {
		t.Errorf("Backfill of 10801 instants = %v, want a limit error", err)
	}
	if got := jobs(t, q, "s"); len(got) != 0 {
		t.Errorf("a refused Backfill enqueued %d jobs", len(got))
	}
	if _, err := Backfill(ctx, q, cfg, "s", t0, t0.Add(-time.Second)); err == nil {
		t.Errorf("Backfill of a reversed range = nil error")
	}
	if _, err := Backfill(ctx, q, cfg, "nope", t0, t0); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("Backfill(nope) = %v, want ErrUnknownSchedule", err)
	}
	res, err := Backfill(ctx, q, cfg, "every", t0, t0.Add(2*time.Hour))
	if err != nil || len(res) != 3 {
		t.Fatalf("Backfill(every) = %d, %v; want 3 jobs", len(res), err)
	}
	if got, want := jobs(t, q, "every"), times(0, time.Hour, 2*time.Hour); !equal(got, want) {
		t.Errorf("every jobs = %v, want %v", got, want)
	}
	if res, err := Backfill(ctx, q, cfg, "every", t0.Add(time.Second), t0.Add(2*time.Second)); err != nil || len(res) != 1 {
		t.Errorf("Backfill of a one-instant range = %v, %v", res, err)
	}
}

func TestPauseResumeErrors(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, fanOut)
	ctx := context.Background()
	if err := Pause(ctx, q, cfg, "nope"); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("Pause(nope) = %v, want ErrUnknownSchedule", err)
	}
	if err := Resume(ctx, q, cfg, "nope", clk.Now(), false); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("Resume(nope) = %v, want ErrUnknownSchedule", err)
	}
	// Pausing a schedule the beat has not seen creates its cursor at now;
	// resuming it later catches up from there.
	if err := Pause(ctx, q, cfg, "s"); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if c := cursor(t, q, "s"); !c.Paused || !c.At.Equal(t0) {
		t.Errorf("cursor = %+v, want paused at t0", c)
	}
	// Pausing it again says so and keeps when the pause began.
	clk.Advance(30 * time.Minute)
	if was, err := PauseSettled(ctx, q, cfg, "s"); err != nil || !was {
		t.Errorf("PauseSettled of a paused schedule = %v, %v; want true", was, err)
	}
	if c := cursor(t, q, "s"); !c.Paused || !c.PausedAt.Equal(t0) {
		t.Errorf("cursor after a second pause = %+v, want paused since t0", c)
	}
	if err := Resume(ctx, q, cfg, "s", t0.Add(2*time.Hour+time.Minute), true); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if got, want := skips(t, q, "s"), []string{"paused 13:00:00", "paused 14:00:00"}; !equal(got, want) {
		t.Errorf("skips = %v, want %v", got, want)
	}
	c := cursor(t, q, "s")
	if c.Paused || !c.At.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("cursor = %+v, want resumed at 14:00", c)
	}
	// Resuming an unknown cursor just creates it.
	cfg2 := mustParse(t, strings.Replace(fanOut, `name = "s"`, `name = "fresh"`, 1))
	if err := Resume(ctx, q, cfg2, "fresh", t0, false); err != nil {
		t.Fatalf("Resume(fresh): %v", err)
	}
	if c := cursor(t, q, "fresh"); c.Paused || c.Schedule != "fresh" {
		t.Errorf("cursor = %+v, want an active cursor", c)
	}
}

func TestNextRuns(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
[tasks.t]
[[schedule]]
name = "daily-gap"
cron = "30 2 * * *"
timezone = "America/New_York"
task = "t"
[[schedule]]
name = "daily-fold"
cron = "30 1 * * *"
timezone = "America/New_York"
task = "t"
[[schedule]]
name = "hourly"
cron = "0 * * * *"
timezone = "America/New_York"
task = "t"
[[schedule]]
name = "hourly-lord-howe"
cron = "0 * * * *"
timezone = "Australia/Lord_Howe"
task = "t"
[[schedule]]
name = "quarter-night"
cron = "*/15 0-3 * * *"
timezone = "America/New_York"
task = "t"
[[schedule]]
name = "lord-howe-fold"
cron = "45 1 * * *"
timezone = "Australia/Lord_Howe"
task = "t"
[[schedule]]
name = "lord-howe-early"
cron = "15 1 * * *"
timezone = "Australia/Lord_Howe"
task = "t"
[[schedule]]
name = "utc-hourly"
cron = "0 * * * *"
task = "t"
[[schedule]]
name = "every"
cron = "@every 10s"
task = "t"
`)
	tests := []struct {
		name     string
		schedule string
		from     string
		cursor   string // empty: none
		n        int
		want     []string // RFC 3339 with fractions, then " moved" or " folded"
	}{
		{"spring-forward daily runs at the jump", "daily-gap", "2026-03-07T12:00:00-05:00", "", 2,
			[]string{"2026-03-08T03:00:00-04:00 moved", "2026-03-09T02:30:00-04:00"}},
		{"fall-back daily runs once, marked", "daily-fold", "2026-10-31T12:00:00-04:00", "", 2,
			[]string{"2026-11-01T01:30:00-04:00 folded", "2026-11-02T01:30:00-05:00"}},
		{"fall-back hourly marks the second 01:00", "hourly", "2026-11-01T00:30:00-04:00", "", 3,
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:00:00-05:00 folded", "2026-11-01T02:00:00-05:00"}},
		{"spring-forward hourly loses nothing to mark", "hourly", "2026-03-08T00:30:00-05:00", "", 2,
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00"}},
		{"lord howe hourly runs one real hour after 01:00", "hourly-lord-howe", "2026-10-04T00:30:00+10:30", "", 3,
			[]string{"2026-10-04T01:00:00+10:30", "2026-10-04T02:30:00+11:00 moved", "2026-10-04T03:00:00+11:00"}},
		// The hour field is not "*": the second pass of 01:xx is skipped,
		// so 01:45 EDT is followed by 02:00 EST, 75 real minutes later.
		{"quarter hours of the night on a fall-back night", "quarter-night", "2026-11-01T01:40:00-04:00", "", 3,
			[]string{"2026-11-01T01:45:00-04:00 folded", "2026-11-01T02:00:00-05:00", "2026-11-01T02:15:00-05:00"}},
		{"lord howe 30-minute fold", "lord-howe-fold", "2026-04-05T00:00:00+11:00", "", 2,
			[]string{"2026-04-05T01:45:00+11:00 folded", "2026-04-06T01:45:00+10:30"}},
		{"lord howe fold before the repeated half hour is not marked", "lord-howe-fold", "2026-04-04T00:00:00+11:00", "", 1,
			[]string{"2026-04-04T01:45:00+11:00"}},
		{"lord howe wall time outside the fold is not marked", "lord-howe-early", "2026-04-05T00:00:00+11:00", "", 1,
			[]string{"2026-04-05T01:15:00+11:00"}},
		{"utc is never marked", "utc-hourly", "2026-11-01T00:30:00Z", "", 2,
			[]string{"2026-11-01T01:00:00Z", "2026-11-01T02:00:00Z"}},
		{"every without cursor counts from from", "every", "2026-01-01T15:01:55Z", "", 2,
			[]string{"2026-01-01T15:02:05Z", "2026-01-01T15:02:15Z"}},
		{"every counts from the cursor", "every", "2026-01-01T15:01:55Z", "2026-01-01T15:01:51.25Z", 2,
			[]string{"2026-01-01T15:02:01.25Z", "2026-01-01T15:02:11.25Z"}},
		{"every from before the cursor stays on its series", "every", "2026-01-01T15:01:30Z", "2026-01-01T15:01:51.25Z", 2,
			[]string{"2026-01-01T15:01:31.25Z", "2026-01-01T15:01:41.25Z"}},
		{"every from on the series is exclusive", "every", "2026-01-01T15:02:01.25Z", "2026-01-01T15:01:51.25Z", 1,
			[]string{"2026-01-01T15:02:11.25Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := NextOptions{From: mustTimeNano(t, tt.from)}
			if tt.cursor != "" {
				opts.Cursor = mustTimeNano(t, tt.cursor)
			}
			got, err := NextRuns(cfg, tt.schedule, tt.n, opts)
			if err != nil {
				t.Fatalf("NextRuns: %v", err)
			}
			var gotS []string
			for _, r := range got {
				v := r.At.Format(time.RFC3339Nano)
				if r.DST != "" {
					v += " " + r.DST
					if r.Note == "" {
						t.Errorf("run %v marked %s without a note", r.At, r.DST)
					}
				}
				gotS = append(gotS, v)
			}
			if !equal(gotS, tt.want) {
				t.Errorf("NextRuns(%s, %s) = %v, want %v", tt.schedule, tt.from, gotS, tt.want)
			}
		})
	}
}

func mustTimeNano(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time.Parse(%q): %v", s, err)
	}
	return v
}

const every20s = `
[tasks.t]
[[schedule]]
name = "s"
cron = "@every 20s"
task = "t"
`

// TestResumeFollowsCatchUpExactly: an @every 20s schedule, run at +20s,
// paused at +25s for 80 s (the instants +40s to +100s pass) and resumed at
// +105s. Resume applies catch_up alone: misfire_grace (1m) would count +60s
// to +100s as on time and run them whatever the policy. Every instant not
// run is recorded as paused.
func TestResumeFollowsCatchUpExactly(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		catchUp   string
		wantJobs  []string
		wantSkips []string
	}{
		{`catch_up = "none"`, times(20*s, 120*s), []string{"paused 12:00:40", "paused 12:01:00", "paused 12:01:20", "paused 12:01:40"}},
		{`catch_up = "latest"`, times(20*s, 100*s, 120*s), []string{"paused 12:00:40", "paused 12:01:00", "paused 12:01:20"}},
		{"catch_up = \"all\"\ncatch_up_limit = 2", times(20*s, 80*s, 100*s, 120*s), []string{"paused 12:00:40", "paused 12:01:00"}},
		{`catch_up = "all"`, times(20*s, 40*s, 60*s, 80*s, 100*s, 120*s), nil},
	}
	for _, tt := range tests {
		t.Run(tt.catchUp, func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			cfg := mustParse(t, every20s+tt.catchUp+"\n")
			ctx := context.Background()
			r := startBeat(t, q, cfg, clk)
			r.advance(20 * s)
			r.advance(5 * s)
			if err := Pause(ctx, q, cfg, "s"); err != nil {
				t.Fatalf("Pause: %v", err)
			}
			for range 4 {
				r.advance(20 * s)
			}
			if got, want := jobs(t, q, "s"), times(20*s); !equal(got, want) {
				t.Fatalf("jobs while paused = %v, want %v", got, want)
			}
			if err := Resume(ctx, q, cfg, "s", clk.Now(), false); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			r.advance(0)
			r.advance(15 * s) // +120s: the first instant after the resume
			if got := jobs(t, q, "s"); !equal(got, tt.wantJobs) {
				t.Errorf("jobs = %v, want %v", got, tt.wantJobs)
			}
			if got := skips(t, q, "s"); !equal(got, tt.wantSkips) {
				t.Errorf("skips = %v, want %v", got, tt.wantSkips)
			}
			if c := cursor(t, q, "s"); c.Paused || !c.At.Equal(t0.Add(120*s)) {
				t.Errorf("cursor = %+v, want running at 12:02:00", c)
			}
		})
	}
}

// TestResumeAfterDowntimeTellsMisfireFromPaused: the daemon was down from
// +0s, the schedule was paused at +45s (+20s and +40s already missed) and
// resumed at +125s. Instants missed before the pause are skipped as misfire,
// those after it as paused, and catch_up decides over all of them.
func TestResumeAfterDowntimeTellsMisfireFromPaused(t *testing.T) {
	t.Parallel()
	s := time.Second
	tests := []struct {
		catchUp   string
		skip      bool
		wantJobs  []string
		wantSkips []string
	}{
		{`catch_up = "none"`, false, nil,
			[]string{"misfire 12:00:20", "misfire 12:00:40", "paused 12:01:00", "paused 12:01:20", "paused 12:01:40", "paused 12:02:00"}},
		{`catch_up = "latest"`, false, times(120 * s),
			[]string{"misfire 12:00:20", "misfire 12:00:40", "paused 12:01:00", "paused 12:01:20", "paused 12:01:40"}},
		{"catch_up = \"all\"\ncatch_up_limit = 5", false, times(40*s, 60*s, 80*s, 100*s, 120*s),
			[]string{"misfire 12:00:20"}},
		{`catch_up = "all"`, true, nil,
			[]string{"misfire 12:00:20", "misfire 12:00:40", "paused 12:01:00", "paused 12:01:20", "paused 12:01:40", "paused 12:02:00"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s skip=%v", tt.catchUp, tt.skip), func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			cfg := mustParse(t, every20s+tt.catchUp+"\n")
			ctx := context.Background()
			b, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.pass(ctx, clk.Now()); err != nil { // the cursor at +0s
				t.Fatal(err)
			}
			clk.Advance(45 * s)
			if err := Pause(ctx, q, cfg, "s"); err != nil {
				t.Fatalf("Pause: %v", err)
			}
			clk.Advance(80 * s)
			if err := Resume(ctx, q, cfg, "s", clk.Now(), tt.skip); err != nil {
				t.Fatalf("Resume: %v", err)
			}
			if _, err := b.pass(ctx, clk.Now()); err != nil {
				t.Fatal(err)
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

// TestPauseWinsOverABeatInFlight: a beat reads the cursor running, -pause
// commits, then the beat commits what it read: nothing is materialised, and
// the schedule stays paused where it was.
func TestPauseWinsOverABeatInFlight(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, every20s)
	ctx := context.Background()
	b, err := NewBeat(q, cfg, BeatConfig{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pass(ctx, clk.Now()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	read := cursor(t, q, "s") // the beat's read
	if err := Pause(ctx, q, cfg, "s"); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	s, _ := cfg.Schedule("s")
	tk, _ := b.advance(cfg, s, read, true, map[string]time.Time{}, clk.Now())
	if tk == nil {
		t.Fatal("advance planned nothing: want instants to commit")
	}
	res, err := q.AdvanceBatch(ctx, []store.Advance{tk.adv}) // the beat's commit
	if err != nil || !errors.Is(res[0].Err, store.ErrCursorMoved) {
		t.Fatalf("commit of the beat's read = %v, %+v, want ErrCursorMoved", err, res)
	}
	if _, err := b.pass(ctx, clk.Now()); err != nil { // the beat reads again
		t.Fatal(err)
	}
	if got := jobs(t, q, "s"); len(got) != 0 {
		t.Errorf("jobs = %v, want none: the schedule was paused before the beat committed", got)
	}
	if got := skips(t, q, "s"); len(got) != 0 {
		t.Errorf("skips = %v, want none yet", got)
	}
	if c := cursor(t, q, "s"); !c.Paused || !c.At.Equal(t0) {
		t.Errorf("cursor = %+v, want paused at 12:00:00", c)
	}
}

// TestBackfillAndTriggerKeyStayIdempotentAfterPurge: once the jobs of a
// backfill and of a keyed trigger ran and retain_done purged them, the same
// backfill and trigger enqueue nothing.
func TestBackfillAndTriggerKeyStayIdempotentAfterPurge(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	cfg := mustParse(t, fanOut)
	ctx := context.Background()
	from, to := t0.Add(-2*time.Hour), t0.Add(-time.Hour)
	enqueue := func() (inserted, purged int) {
		t.Helper()
		res, err := Backfill(ctx, q, cfg, "s", from, to)
		if err != nil {
			t.Fatalf("Backfill: %v", err)
		}
		more, err := Trigger(ctx, q, cfg, "s", TriggerOptions{Key: "deploy-42", Now: clk.Now()})
		if err != nil {
			t.Fatalf("Trigger: %v", err)
		}
		for _, r := range append(res, more...) {
			if r.Inserted {
				inserted++
			}
			if r.Purged {
				purged++
			}
		}
		return inserted, purged
	}
	if n, _ := enqueue(); n != 6 {
		t.Fatalf("%d jobs enqueued, want 6", n)
	}

	ran := make(chan string, 6)
	p, err := queue.NewPool(q, queue.PoolConfig{Workers: 2, Clock: clk, MaintenanceEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	p.Register("t", queue.HandlerFunc(func(ctx context.Context, j *queue.Job) error { ran <- j.Key; return nil }), queue.TypeConfig{})
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	for range 6 {
		waitFor(t, ran)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for s, _ := q.Stats(ctx); s.Total[queue.StateDone] != 6; s, _ = q.Stats(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("jobs not recorded done: %v", s.Total)
		}
		time.Sleep(time.Millisecond) // polling interval of a deadline loop, not a sync point
	}
	cancel()
	if err := waitFor(t, done); err != nil {
		t.Fatalf("pool: %v", err)
	}

	clk.Advance(8 * 24 * time.Hour)
	// The store may keep the newest job, so that its id is never drawn
	// again (SQLite does): every other one is purged.
	rep, err := q.Engine().Maintain(ctx, 7*24*time.Hour)
	if err != nil || rep.Purged < 5 {
		t.Fatalf("Maintain = %+v, %v; want 5 or 6 purged", rep, err)
	}
	if inserted, purged := enqueue(); inserted != 0 || purged != int(rep.Purged) {
		t.Errorf("after purge: %d enqueued, %d found used by purged jobs; want 0 and %d", inserted, purged, rep.Purged)
	}
	if got := jobs(t, q, "s"); len(got) != 6-int(rep.Purged) {
		t.Errorf("jobs after purge = %v, want %d", got, 6-rep.Purged)
	}
}
