package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// alarmConfig is "page ops when the nightly report misses its deadline":
// the report's instant is {{CRON}}, its deadline 5s, and page-ops appends
// each alarm's payload to pages.log as one line, in one write.
const alarmConfig = `
[scheduler]
timezone = "UTC"
lease = "2s"
shutdown_grace = "2s"

[tasks.report]
command = ["{{REC}}", "-file", "{{RECORD}}"]

[tasks.page-ops]
command = ["/bin/sh", "-c", "payload=$(cat); printf '%s\n' \"$payload\" >> {{DIR}}/pages.log"]

[[schedule]]
name = "nightly"
cron = "{{CRON}}"
task = "report"
deadline = "5s"
notify = ["page-ops"]
`

// beatInterval is the beat's longest sleep (schedule.DefaultMaxSleep): an
// alarm due while no daemon ran is raised by the first pass of the next
// one, well within it.
const beatInterval = 30 * time.Second

// pages returns the alarm payloads page-ops has written, in order.
func pages(t *testing.T, s *site) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(s.path("pages.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	// Whole lines only: page-ops's shell creates the file before its printf
	// writes the line, so a read between the two finds an empty file, and
	// one during the write a line without its newline yet.
	lines := strings.Split(string(b), "\n")
	for _, line := range lines[:len(lines)-1] {
		var p map[string]any
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("pages.log line %q: %v", line, err)
		}
		out = append(out, p)
	}
	return out
}

func kinds(ps []map[string]any) string {
	var ks []string
	for _, p := range ps {
		ks = append(ks, fmt.Sprint(p["kind"]))
	}
	return strings.Join(ks, ",")
}

// TestAlarmAcrossDowntime: the daemon is stopped before the nightly
// report's instant and started after its deadline passed. The first pass
// of the new daemon materialises the late instant and raises missed: the
// page-ops task runs once, within one beat interval of the start. The
// late run then succeeds and recovered runs once. A restart raises
// nothing again. On SQLite and, with SCHEDULER_TEST_POSTGRES, PostgreSQL.
func TestAlarmAcrossDowntime(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testAlarmAcrossDowntime(t, "")
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testAlarmAcrossDowntime(t, pgSchema(t))
	})
}

func testAlarmAcrossDowntime(t *testing.T, dsn string) {
	instant := time.Now().UTC().Truncate(time.Second).Add(10 * time.Second)
	cron := fmt.Sprintf("%d %d %d * * *", instant.Second(), instant.Minute(), instant.Hour())
	s := newSite(t, strings.ReplaceAll(alarmConfig, "{{CRON}}", cron))
	if dsn != "" {
		s.db = dsn
	}
	d := s.start()
	d.waitMsg("schedule started", 1)
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if time.Now().After(instant) {
		t.Fatalf("the daemon stopped at %s, after the instant %s: start-up too slow for this test", time.Now().UTC(), instant)
	}
	// Down across the instant and its deadline: wall time must pass.
	time.Sleep(time.Until(instant.Add(7 * time.Second)))

	d = s.start()
	eventually(t, "page-ops paged for the missed deadline", func() bool { return len(pages(t, s)) >= 1 })
	started, err := time.Parse(time.RFC3339Nano, fmt.Sprint(d.entries("scheduler started")[0]["time"]))
	if err != nil {
		t.Fatal(err)
	}
	d.waitMsg("incident opened", 1)
	raised, err := time.Parse(time.RFC3339Nano, fmt.Sprint(d.entries("incident opened")[0]["time"]))
	if err != nil {
		t.Fatal(err)
	}
	if raised.Sub(started) > beatInterval {
		t.Errorf("missed raised %s after the start, beyond one beat interval (%s)", raised.Sub(started), beatInterval)
	}
	missed := pages(t, s)[0]
	want := map[string]any{"schedule": "nightly", "item": "", "kind": "missed",
		"instant": instant.Format(time.RFC3339), "deadline": instant.Add(5 * time.Second).Format(time.RFC3339)}
	for k, v := range want {
		if missed[k] != v {
			t.Errorf("missed payload %s = %v, want %v (payload %v)", k, missed[k], v, missed)
		}
	}
	if id, _ := missed["job_id"].(float64); id == 0 {
		t.Errorf("missed payload has no job id: %v", missed)
	}
	e := d.entries("incident opened")[0]
	if e["level"] != "ERROR" || e["schedule"] != "nightly" || e["kind"] != "missed" || e["instant"] != instant.Format(time.RFC3339) {
		t.Errorf("alarm log entry = %v, want an error naming nightly, missed and the instant", e)
	}

	eventually(t, "the late run to succeed and recovered to be paged", func() bool { return len(pages(t, s)) >= 2 })
	if got := kinds(pages(t, s)); got != "missed,recovered" {
		t.Errorf("pages = %s, want missed,recovered", got)
	}
	if err := d.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	rec := byKey(readRecord(t, s.record))
	key := "nightly||" + instant.Format(time.RFC3339)
	if r := rec[key]; r == nil || r.executions() != 1 {
		t.Errorf("the report of %s did not run exactly once", key)
	}

	// Exactly once, however many restarts.
	d = s.start()
	holds(t, 5*time.Second, "no alarm paged again after a restart", func() error {
		if got := kinds(pages(t, s)); got != "missed,recovered" {
			return fmt.Errorf("pages = %s", got)
		}
		return nil
	})
	if err := d.stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	out := s.mustCLI("-alarms")
	if !strings.Contains(out, "missed") || !strings.Contains(out, "recovered") {
		t.Errorf("-alarms =\n%s\nwant the missed and recovered alarms", out)
	}
	t.Logf("down across the instant and its deadline: missed raised %s after the start, paged once; recovered paged once",
		raised.Sub(started).Round(time.Millisecond))
}
