package scheduletest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/schedule"
)

const nightly = `
[tasks.report]
command = ["true"]

[tasks.page]

[[schedule]]
name = "nightly"
cron = "0 3 * * *"
task = "report"
payload = { format = "pdf" }
for_each = [ { customer = "acme" }, { customer = "globex" } ]
overlap = "skip"
catch_up = "none"
start_within = "5m"
notify = ["page"]
`

var engines = []string{"sqlite", "postgres"}

// engineConfig is a Config on engine: the default (SQLite) or, by its URL,
// a PostgreSQL schema of the test's own.
func engineConfig(t *testing.T, engine string) Config {
	t.Helper()
	if engine == "sqlite" {
		return Config{}
	}
	return Config{DB: pgtest.DSN(t)}
}

func keys(jobs []*queue.Job) string {
	var ks []string
	for _, j := range jobs {
		ks = append(ks, j.Key)
	}
	return strings.Join(ks, " ")
}

func skips(t Tick) string {
	var ss []string
	for _, s := range t.Skips {
		ss = append(ss, fmt.Sprintf("%s/%s@%s:%s", s.Schedule, s.Item, s.ScheduledAt.UTC().Format("01-02T15:04"), s.Reason))
	}
	return strings.Join(ss, " ")
}

// TestTick: each Tick reports what its pass wrote: an instant's jobs per
// fan-out item, overlap skips while they are pending, two late alarms and
// their incident's one notification, and misfires after a gap, on each engine.
func TestTick(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			b := Parse(t, nightly, engineConfig(t, engine))
			at := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)

			tick := b.Tick(at)
			want := schedule.DedupKey("nightly", "customer=acme", at) + " " + schedule.DedupKey("nightly", "customer=globex", at)
			if got := keys(tick.Jobs); got != want || len(tick.Skips)+len(tick.Alarms) != 0 {
				t.Fatalf("Tick(03:00) = jobs %s, skips %v, alarms %v; want jobs %s", got, tick.Skips, tick.Alarms, want)
			}
			if tick.Jobs[0].Payload == nil || !strings.Contains(string(tick.Jobs[0].Payload), `"customer":"acme"`) {
				t.Errorf("job payload = %s", tick.Jobs[0].Payload)
			}

			// Nothing ran: six minutes on, both items are late.
			tick = b.Tick(at.Add(6 * time.Minute))
			if len(tick.Alarms) != 2 || tick.Alarms[0].Kind != "late" {
				t.Fatalf("Tick(03:06) alarms = %+v, want two late", tick.Alarms)
			}
			// Both count on one incident: one notification.
			if got := keys(tick.Jobs); !strings.HasPrefix(got, "alarm:incident:") || tick.Jobs[0].Type != "page" || len(tick.Jobs) != 1 {
				t.Errorf("Tick(03:06) jobs = %s, want the incident's one notification", got)
			}

			// The next night the previous jobs are still pending: skipped.
			tick = b.Tick(at.Add(24 * time.Hour))
			if got, want := skips(tick), "nightly/customer=acme@03-03T03:00:overlap nightly/customer=globex@03-03T03:00:overlap"; got != want || len(tick.Jobs) != 0 {
				t.Errorf("Tick(next night) = jobs %s, skips %s; want skips %s", keys(tick.Jobs), got, want)
			}

			// After three nights unseen, catch_up = "none" skips those missed.
			tick = b.Tick(at.Add(4*24*time.Hour + time.Hour))
			if got, want := skips(tick), "nightly/@03-04T03:00:misfire nightly/@03-05T03:00:misfire nightly/@03-06T03:00:misfire"; got != want {
				t.Errorf("Tick(after a gap) skips = %s, want %s", got, want)
			}
			if _, onPostgres := b.Queue().Engine().(*postgres.Store); onPostgres != (engine == "postgres") {
				t.Errorf("the beat's queue is on %T, want %s", b.Queue().Engine(), engine)
			}
		})
	}
}

// TestLoadAndBadInput: Load reads a file; a bad config or a tick that is
// not after the last fails the test with a message naming the problem.
func TestLoadAndBadInput(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "schedules.toml")
	if err := os.WriteFile(path, []byte(nightly), 0o600); err != nil {
		t.Fatal(err)
	}
	b := Load(fakeTB{t}, path, Config{})
	at := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	if n := len(b.Tick(at).Jobs); n != 2 {
		t.Errorf("Tick of a loaded file = %d jobs, want 2", n)
	}
	if msg := failure(t, func(TB) { b.Tick(at) }); msg != "tick at 2026-03-02T03:00:00Z: not after the last tick, 2026-03-02T03:00:00Z" {
		t.Errorf("a repeated Tick fails with %q", msg)
	}
	bad := strings.Replace(nightly, `cron = "0 3 * * *"`, `cron = "0 25 * * *"`, 1)
	if msg := failure(t, func(tb TB) { Parse(tb, bad, Config{}) }); !strings.Contains(msg, "parse schedules.toml:") || !strings.Contains(msg, "cron") {
		t.Errorf("Parse of a bad cron fails with %q", msg)
	}
	if msg := failure(t, func(tb TB) { Load(tb, filepath.Join(t.TempDir(), "none.toml"), Config{}) }); !strings.Contains(msg, "none.toml") {
		t.Errorf("Load of a missing file fails with %q", msg)
	}
	db := filepath.Join(t.TempDir(), "own.db")
	Parse(t, nightly, Config{DB: db}).Tick(at)
	if _, err := os.Stat(db); err != nil {
		t.Errorf("Config.DB names a SQLite file, but: %v", err)
	}
	if msg := failure(t, func(tb TB) { Parse(tb, nightly, Config{DB: filepath.Join(t.TempDir(), "none", "jobs.db")}) }); !strings.HasPrefix(msg, "open queue: ") || !strings.Contains(msg, "none") {
		t.Errorf("a DB that does not open fails with %q", msg)
	}
}

// failed is what a fakeTB's Fatalf panics with, to stop the helper.
type failed struct{ msg string }

// fakeTB records a helper's failure; the rest it takes from t.
type fakeTB struct{ *testing.T }

func (f fakeTB) Fatalf(format string, args ...any) { panic(failed{fmt.Sprintf(format, args...)}) }

// failure runs fn with a fakeTB and returns its failure, "" when it passed.
func failure(t *testing.T, fn func(tb TB)) (msg string) {
	t.Helper()
	defer func() {
		if v := recover(); v != nil {
			f, ok := v.(failed)
			if !ok {
				panic(v)
			}
			msg = f.msg
		}
	}()
	fn(fakeTB{t})
	return ""
}
