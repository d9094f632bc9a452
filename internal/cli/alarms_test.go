package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

const alarmsConfig = `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "nightly"
cron = "0 3 * * *"
timezone = "Europe/Paris"
task = "rec"
deadline = "1h"
[[schedule]]
name = "plain"
cron = "0 4 * * *"
task = "rec"
`

// TestAlarmsCommand: -alarms lists the stored alarms newest first, in the
// schedule's zone, narrowed by -schedule and -limit, as text and JSON, from
// a read-only open; -status shows the schedule's deadline state.
func TestAlarmsCommand(t *testing.T) {
	t.Parallel()
	dir := setup(t, alarmsConfig)
	if _, errs, code := cli(t, dir, "-alarms"); code != 1 || !strings.Contains(errs, "has the daemon run") {
		t.Errorf("-alarms before any daemon: exit %d, %s; want 1 and the missing database", code, errs)
	}
	ctx := context.Background()
	q, err := engine.Open(ctx, filepath.Join(dir, "scheduler.db"), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	instant := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC) // 03:00 in Paris
	if _, err := q.Advance(ctx, store.Advance{Schedule: "nightly", To: instant,
		Jobs: []queue.NewJob{{Key: "nightly||2026-03-01T02:00:00Z", Type: "rec", Schedule: "nightly", ScheduledAt: instant, RunAt: instant}}}); err != nil {
		t.Fatal(err)
	}
	missed := store.NewAlarm{Schedule: "nightly", ScheduledAt: instant, Kind: store.AlarmMissed, JobID: 1, Error: "exit status 3"}
	if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{missed}}); err != nil {
		t.Fatal(err)
	}
	q.Close()

	out := mustCLI(t, dir, "-alarms")
	for _, want := range []string{"nightly", "2026-03-01T03:00:00+01:00", "missed (open)", "exit status 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("-alarms =\n%s\nwant %q in it", out, want)
		}
	}
	var views []alarmView
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-alarms", "-json", "-schedule", "nightly", "-limit", "1")), &views); err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Kind != "missed" || !views[0].Open || views[0].Instant != "2026-03-01T03:00:00+01:00" {
		t.Errorf("-alarms -json = %+v", views)
	}
	if out := mustCLI(t, dir, "-alarms", "-schedule", "plain"); !strings.Contains(out, "no alarms of plain are kept") {
		t.Errorf("-alarms -schedule plain = %s", out)
	}
	status := mustCLI(t, dir, "-status")
	if !strings.Contains(status, "DEADLINE STATE") || !regexp.MustCompile(`nightly +missed +missed`).MatchString(status) {
		t.Errorf("-status =\n%s\nwant nightly's deadline state missed", status)
	}
	var rep struct {
		Schedules []scheduleStatus `json:"schedules"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Schedules {
		want := map[string]string{"nightly": "missed", "plain": ""}[s.Name]
		if s.DeadlineState != want {
			t.Errorf("-status -json: %s deadline_state %q, want %q", s.Name, s.DeadlineState, want)
		}
	}
	if _, errs, code := cli(t, dir, "-alarms", "-state", "dead"); code != 2 || !strings.Contains(errs, "-state goes with -jobs") {
		t.Errorf("-alarms -state: exit %d, %s; want a usage error", code, errs)
	}
}
