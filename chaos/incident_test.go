package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// incidentConfig is a schedule that runs every 2 seconds and fails while
// the file broken exists, notifying page-ops (which appends each payload
// to pages.log) and reminding every 4 seconds until acknowledged.
const incidentConfig = `
[scheduler]
timezone = "UTC"
lease = "2s"
shutdown_grace = "2s"
renotify = "4s"

[tasks.flaky]
command = ["/bin/sh", "-c", "test ! -e {{DIR}}/broken"]
max_attempts = 1

[tasks.page-ops]
command = ["/bin/sh", "-c", "payload=$(cat); printf '%s\n' \"$payload\" >> {{DIR}}/pages.log"]

[[schedule]]
name = "flaky"
cron = "*/2 * * * * *"
task = "flaky"
notify = ["page-ops"]
`

// incidentFailing is how long the schedule fails: a minute of runs every
// 2 seconds.
const incidentFailing = time.Minute

// notices counts pages by notice (first, reminder, resolved), checking
// that every page is of incident id. A page written twice alike is one
// notification job run twice: a daemon killed after its command wrote the
// page and before the job's end committed runs it again, as at-least-once
// promises; the test counts notifications, so it counts such a page once.
func notices(t *testing.T, s *site, id float64) map[string]int {
	t.Helper()
	out := map[string]int{}
	seen := map[string]bool{}
	for _, p := range pages(t, s) {
		if p["incident"] != id {
			t.Fatalf("a page of incident %v, want only %v: %v", p["incident"], id, p)
		}
		if line := fmt.Sprint(p); !seen[line] {
			seen[line] = true
			out[fmt.Sprint(p["notice"])]++
		}
	}
	return out
}

// TestIncidentOnePage: a schedule failing every 2 seconds for a minute
// opens one incident and pages once; renotify repeats the page until an
// operator acknowledges it (-ack), then stays quiet; a daemon killed with
// SIGKILL between two failures and started again pages nothing again;
// fixing the command resolves the incident with one page that counts the
// failures. On SQLite with one daemon and, with SCHEDULER_TEST_POSTGRES,
// on PostgreSQL with two nodes, one of them killed. It takes a minute and
// a little of wall time: the daemons run on the real clock.
func TestIncidentOnePage(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testIncidentOnePage(t, "", 1)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testIncidentOnePage(t, pgSchema(t), 2)
	})
}

func testIncidentOnePage(t *testing.T, dsn string, nodes int) {
	s := newSite(t, incidentConfig)
	if dsn != "" {
		s.db = dsn
	}
	if err := os.WriteFile(s.path("broken"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ds := make([]*daemon, nodes)
	for i := range ds {
		ds[i] = s.start()
	}
	start := time.Now()
	eventually(t, "the first page", func() bool { return len(pages(t, s)) >= 1 })
	first := pages(t, s)[0]
	id, _ := first["incident"].(float64)
	if first["notice"] != "first" || first["kind"] != "dead" || id == 0 || first["count"] != 1.0 {
		t.Fatalf("first page = %v, want the first notice of a dead incident, one occurrence", first)
	}
	eventually(t, "a reminder", func() bool { return notices(t, s, id)["reminder"] >= 1 })

	// SIGKILL a daemon between two failures and start it again.
	ds[0].kill()
	ds[0] = s.start()

	out := s.mustCLI("-ack", strconv.Itoa(int(id)), "-json")
	var acked struct {
		Reminders int     `json:"reminders"`
		AckedBy   *string `json:"acked_by"`
	}
	if err := json.Unmarshal([]byte(out), &acked); err != nil || acked.AckedBy == nil {
		t.Fatalf("-ack -json = %s (%v), want the incident acknowledged", out, err)
	}
	// The reminders sent before the acknowledgement end up paged; none
	// after it, whatever fails, restarts or is killed.
	eventually(t, "the reminders sent before the acknowledgement", func() bool {
		return notices(t, s, id)["reminder"] == acked.Reminders
	})
	holds(t, max(time.Until(start.Add(incidentFailing)), 5*time.Second), "one incident, paged once, quiet once acknowledged", func() error {
		if n := notices(t, s, id); n["first"] != 1 || n["reminder"] != acked.Reminders || n["resolved"] != 0 {
			return fmt.Errorf("pages by notice %v, want 1 first and %d reminders", n, acked.Reminders)
		}
		return nil
	})
	if nodes > 1 {
		ds[1].kill() // the other node goes on alone
	}

	if err := os.Remove(s.path("broken")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the resolution", func() bool { return notices(t, s, id)["resolved"] >= 1 })
	holds(t, 5*time.Second, "one resolution", func() error {
		if n := notices(t, s, id); n["first"] != 1 || n["resolved"] != 1 || n["reminder"] != acked.Reminders {
			return fmt.Errorf("pages by notice %v", n)
		}
		return nil
	})
	ps := pages(t, s)
	resolved := ps[len(ps)-1]
	count, _ := resolved["count"].(float64)
	if resolved["kind"] != "recovered" || resolved["incident_kind"] != "dead" || count < 10 {
		t.Errorf("resolution = %v, want a recovery of the dead incident counting every failure", resolved)
	}
	for _, d := range ds {
		if d.exited() {
			continue
		}
		if err := d.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}
	// Good news at INFO: the node left alive resolved it.
	if es := ds[0].entries("incident resolved"); len(es) != 1 || es[0]["level"] != "INFO" || es[0]["incident"] != id {
		t.Errorf("incident resolved log entries = %v, want one at INFO", es)
	}
	t.Logf("%d node(s): %.0f failures over %s, %d page(s): 1 first notice, %d reminder(s) before the acknowledgement, 1 resolution",
		nodes, count, time.Since(start).Round(time.Second), len(ps), acked.Reminders)
}
