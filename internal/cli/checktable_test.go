package cli

import (
	"bytes"
	"fmt"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestScheduleTableAlignsAsTabwriter checks that -check's table, written in
// two passes, is byte for byte what a tabwriter gives: names of several
// widths, zones, items.
func TestScheduleTableAlignsAsTabwriter(t *testing.T) {
	t.Parallel()
	const toml = `
[tasks.t]
command = ["true"]
[tasks.a-longer-task-name]
command = ["true"]
[[schedule]]
name = "r"
cron = "0 3 * * *"
task = "t"
for_each = [ { c = "acme" }, { c = "globex" } ]
[[schedule]]
name = "nightly-report-for-customers"
cron = "CRON_TZ=Europe/Berlin 30 2 * * 1-5"
task = "a-longer-task-name"
[[schedule]]
name = "every-minute"
cron = "* * * * *"
timezone = "America/New_York"
task = "t"
`
	cfg, err := config.Parse("schedules.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 29, 0, 30, 0, 0, time.UTC)
	var want bytes.Buffer
	w := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "SCHEDULE\tCRON\tZONE\tTASK\tITEMS\tNEXT RUN\n")
	for _, s := range cfg.Schedules {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, s.Cron, s.Location, s.Task, len(s.Items()), rfc3339(s.Next(now), s.Location))
	}
	w.Flush()
	var got bytes.Buffer
	if err := printScheduleTable(&got, cfg.Schedules, now); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("table:\n%s\nwant:\n%s", got.String(), want.String())
	}
}
