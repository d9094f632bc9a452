package schedule

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

func TestAgree(t *testing.T) {
	t.Parallel()
	now := t0
	row := func(owner string, pid int, sha string, at time.Time) store.PoolRow {
		return store.PoolRow{Owner: owner, PID: pid, Host: "h", LastSeen: now, Config: sha, ConfigAt: at}
	}
	self := queue.Process{PID: 1, Host: "h", Config: "aaa", ConfigAt: now.Add(-time.Hour)}
	for _, tt := range []struct {
		name      string
		rows      []store.PoolRow
		self      queue.Process
		configs   int
		ruling    string
		selfRules bool
		daemons   int
	}{
		{"alone", nil, self, 1, "aaa", true, 1},
		{"others agree", []store.PoolRow{row("o", 2, "aaa", now)}, self, 1, "aaa", true, 2},
		{"another loaded later", []store.PoolRow{row("o", 2, "bbb", now)}, self, 2, "bbb", false, 2},
		{"another loaded before", []store.PoolRow{row("o", 2, "bbb", now.Add(-2*time.Hour))}, self, 2, "aaa", true, 2},
		{"a tie goes to the greater hash", []store.PoolRow{row("o", 2, "000", self.ConfigAt), row("p", 3, "zzz", self.ConfigAt)}, self, 3, "zzz", false, 3},
		{"a dead row does not count", []store.PoolRow{{Owner: "o", PID: 2, Host: "h", LastSeen: now.Add(-store.AliveWithin - time.Second), Config: "bbb", ConfigAt: now}}, self, 1, "aaa", true, 1},
		{"a row without a config does not count", []store.PoolRow{row("o", 2, "", time.Time{})}, self, 1, "aaa", true, 1},
		{"its own stale row does not count", []store.PoolRow{row("me", 1, "bbb", now)}, self, 1, "aaa", true, 1},
		{"the newest row of a process", []store.PoolRow{row("o", 2, "bbb", now.Add(-2*time.Hour)), row("o/p", 2, "ccc", now)}, self, 2, "ccc", false, 2},
		{"no self", []store.PoolRow{row("o", 2, "bbb", now), row("p", 3, "aaa", now.Add(-time.Hour))}, queue.Process{}, 2, "bbb", false, 2},
		{"nobody", nil, queue.Process{}, 0, "", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := Agree(tt.rows, tt.self, now)
			if a.Configs != tt.configs || a.Ruling != tt.ruling || a.SelfRules != tt.selfRules || len(a.Daemons) != tt.daemons {
				t.Errorf("Agree = %+v; want %d configs, %q ruling, self rules %v, %d daemons", a, tt.configs, tt.ruling, tt.selfRules, tt.daemons)
			}
			if got, want := a.Agreed(), tt.configs <= 1; got != want {
				t.Errorf("Agreed() = %v, want %v", got, want)
			}
		})
	}
}

// presentDaemon writes the row of a pool of another daemon (pid on host h) that
// runs the config sha loaded at at.
func presentDaemon(t *testing.T, q *queue.Client, owner string, pid int, sha string, at, now time.Time) {
	t.Helper()
	if _, err := q.Engine().CommitPoolTx(context.Background(), store.PoolTx{Owner: owner, Now: now, Presence: &store.Presence{
		Types: []string{"t"}, Process: queue.Process{PID: pid, Host: "h", Version: "v", Config: sha, ConfigAt: at}}}); err != nil {
		t.Fatal(err)
	}
}

// minutelyFanOut is due every minute, fanned out to items items.
func minutelyFanOut(items int) string {
	return strings.Replace(fanOuts(items, "s"), "[[schedule]]", "[[schedule]]\ncatch_up = \"none\"", 1)
}

// TestBeatSitsOutWhileAnotherConfigRules: a beat whose daemon runs a config
// older than another live daemon's materialises nothing and says so once;
// when that daemon goes, it takes over, says that the daemons agree, and
// the instants it did not make while sitting out follow the misfire rules
// (here catch_up = "none": 12:02, two minutes late, is recorded as a
// misfire), not lost in silence.
func TestBeatSitsOutWhileAnotherConfigRules(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	var logs syncBuffer
	self := queue.Process{PID: 1, Host: "h", Config: "aaa", ConfigAt: t0.Add(-time.Hour)}
	r := startBeatWith(t, q, mustParse(t, minutelyFanOut(5)), BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil)), Process: self})
	r.clk.Advance(time.Minute)
	r.settle() // 12:01: alone, it rules
	if got := len(jobs(t, q, "s")); got != 5 {
		t.Fatalf("%d jobs at 12:01, want 5", got)
	}
	for range 3 {
		presentDaemon(t, q, "other", 2, "bbb", t0.Add(90*time.Second), clk.Now()) // its renewal
		r.clk.Advance(time.Minute)                                                // 12:02, 12:03, 12:04
		r.settle()
	}
	if got := len(jobs(t, q, "s")); got != 5 {
		t.Errorf("%d jobs after sitting out, want 5 (12:01's)", got)
	}
	if n := strings.Count(logs.String(), "daemons run different configs"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "materialises=false") || !strings.Contains(logs.String(), "ruling_sha256=bbb") {
		t.Errorf("the warning does not say that bbb rules and this beat sits out:\n%s", logs.String())
	}
	if a, ok := r.b.Agreement(); !ok || a.Configs != 2 || a.SelfRules {
		t.Errorf("Agreement() = %+v, %v; want 2 configs, not ruling", a, ok)
	}

	if err := q.Engine().Leave(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	got := r.advance(0) // the recheck finds it gone, at 12:04
	if got.next.IsZero() {
		t.Errorf("after taking over: %+v, want a wait for the next instant", got)
	}
	if n := strings.Count(logs.String(), "daemons agree on the config"); n != 1 {
		t.Errorf("%d lines saying the daemons agree, want 1:\n%s", n, logs.String())
	}
	if got, want := skips(t, q, "s"), []string{"misfire " + label("", t0.Add(2*time.Minute))}; !equal(got, want) {
		t.Errorf("skips = %v, want %v", got, want)
	}
	if got := len(jobs(t, q, "s")); got != 15 {
		t.Errorf("%d jobs after taking over, want 15 (12:01's, and 12:03's and 12:04's, within the grace)", got)
	}
}

// TestBeatsOnDifferentConfigs: two beats on one database whose daemons run
// different configs (5 items against 3, a schedule only one of them has):
// only the newer config's beat materialises, so that every instant has the
// items of that config and the schedule it lacks makes nothing; each beat
// warns once. Once the other reloads the same file, both materialise, and
// say so.
func TestBeatsOnDifferentConfigs(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	var logsA, logsB syncBuffer
	cfgA := mustParse(t, minutelyFanOut(5)+"[[schedule]]\nname = \"only_a\"\ncron = \"* * * * *\"\ntask = \"t\"\n")
	cfgB := mustParse(t, minutelyFanOut(3))
	a := queue.Process{PID: 1, Host: "h", Config: "aaa", ConfigAt: t0.Add(-time.Hour)}
	b := queue.Process{PID: 2, Host: "h", Config: "bbb", ConfigAt: t0.Add(-time.Minute)}
	ra := startBeatWith(t, q, cfgA, BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logsA, nil)), Process: a})
	rb := startBeatWith(t, q, cfgB, BeatConfig{Clock: clk, Logger: slog.New(slog.NewTextHandler(&logsB, nil)), Process: b})
	for range 3 {
		// The rows of both daemons' pools, renewed.
		presentDaemon(t, q, "A", a.PID, a.Config, a.ConfigAt, clk.Now())
		presentDaemon(t, q, "B", b.PID, b.Config, b.ConfigAt, clk.Now())
		clk.Advance(time.Minute)
		ra.b.Wake()
		rb.b.Wake()
		ra.settle()
		rb.settle()
	}
	want := []string{}
	sb, _ := cfgB.Schedule("s")
	for m := 1; m <= 3; m++ {
		for _, it := range sb.Items() {
			want = append(want, label(it.ID, t0.Add(time.Duration(m)*time.Minute)))
		}
	}
	got := jobs(t, q, "s")
	sortLabels(got)
	sortLabels(want)
	if !equal(got, want) {
		t.Errorf("jobs of s = %v, want the 3 items of b's config at each instant: %v", got, want)
	}
	if got := jobs(t, q, "only_a"); len(got) != 0 {
		t.Errorf("jobs of only_a = %v, want none: the ruling config lacks it", got)
	}
	for name, logs := range map[string]*syncBuffer{"a": &logsA, "b": &logsB} {
		if n := strings.Count(logs.String(), "daemons run different configs"); n != 1 {
			t.Errorf("beat %s warned %d times, want once:\n%s", name, n, logs.String())
		}
	}

	// a reloads b's file.
	a.Config, a.ConfigAt = b.Config, clk.Now()
	presentDaemon(t, q, "A", a.PID, a.Config, a.ConfigAt, clk.Now())
	presentDaemon(t, q, "B", b.PID, b.Config, b.ConfigAt, clk.Now())
	ra.b.SetProcess(a)
	ra.b.Apply(cfgB)
	for x, _ := ra.b.Agreement(); !x.SelfRules; x, _ = ra.b.Agreement() {
		ra.settle()
	}
	for x, _ := rb.b.Agreement(); !x.Agreed(); x, _ = rb.b.Agreement() {
		rb.advance(0)
	}
	for name, logs := range map[string]*syncBuffer{"a": &logsA, "b": &logsB} {
		if !strings.Contains(logs.String(), "daemons agree on the config") {
			t.Errorf("beat %s did not say that the daemons agree:\n%s", name, logs.String())
		}
	}
	if x, ok := ra.b.Agreement(); !ok || !x.SelfRules || x.Configs != 1 {
		t.Errorf("a's Agreement() = %+v, %v; want one config, ruling", x, ok)
	}
}
