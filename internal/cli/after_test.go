package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestStatusAndNextShowWaiting: -status and -next show a schedule with
// after, what it follows, and how many of the upstream instant's jobs have
// ended while it waits.
func TestStatusAndNextShowWaiting(t *testing.T) {
	t.Parallel()
	const toml = `
[tasks.t]
command = ["true"]
[[schedule]]
name = "report"
cron = "0 3 * * *"
task = "t"
for_each = [ { c = "acme" }, { c = "globex" }, { c = "initech" } ]
[[schedule]]
name = "summary"
after = "report"
task = "t"
`
	dir := setupDB(t, toml)
	cfg, err := config.Parse("schedules.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	q, err := engine.Open(ctx, filepath.Join(dir, "scheduler.db"), engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	res, err := schedule.Backfill(ctx, q, cfg, "report", at, at)
	if err != nil || len(res) != 3 {
		t.Fatalf("Backfill = %+v, %v", res, err)
	}
	for _, r := range res[:2] {
		if _, err := q.RequestCancel(ctx, r.ID, "test"); err != nil {
			t.Fatal(err)
		}
	}
	q.Close()

	out := mustCLI(t, dir, "-status")
	if !strings.Contains(out, "after report") || !strings.Contains(out, "waiting: 2 of 3 ended") {
		t.Errorf("-status does not show summary waiting on report:\n%s", out)
	}
	var rep struct {
		Schedules []struct {
			Name    string
			After   *string
			Waiting *struct {
				Instant         string
				Ended, Expected int
			}
		}
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range rep.Schedules {
		if s.Name == "summary" {
			found = s.After != nil && *s.After == "report" && s.Waiting != nil && s.Waiting.Ended == 2 && s.Waiting.Expected == 3 &&
				s.Waiting.Instant == "2026-03-01T03:00:00Z"
		}
	}
	if !found {
		t.Errorf("-status -json lacks summary after report, waiting 2 of 3: %+v", rep.Schedules)
	}
	out = mustCLI(t, dir, "-next", "summary", "-n", "2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "2026-03-01T03:00:00Z  waiting: 2 of 3 ended" || !strings.HasSuffix(lines[1], "T03:00:00Z") {
		t.Errorf("-next summary =\n%s\nwant the instant it waits on, then report's next two", out)
	}
}
