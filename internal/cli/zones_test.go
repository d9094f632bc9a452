package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandJobsGetTheirScheduleZone: the daemon gives a schedule's
// command jobs TZ set to the schedule's zone (date(1) prints the
// schedule's wall clock), and a task's own env TZ wins.
func TestCommandJobsGetTheirScheduleZone(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[scheduler]
timezone = "America/New_York"
[tasks.tz]
command = ["sh", "-c", "echo \"$SCHEDULER_SCHEDULE $TZ $(date +%z)\" >> tz.log"]
[tasks.fixed]
command = ["sh", "-c", "echo \"$SCHEDULER_SCHEDULE $TZ\" >> tz.log"]
env = { TZ = "UTC" }
[[schedule]]
name = "tokyo"
cron = "0 3 * * *"
timezone = "Asia/Tokyo"
task = "tz"
[[schedule]]
name = "default-zone"
cron = "0 3 * * *"
task = "fixed"
`)
	startDaemon(t, dir, nil)
	mustCLI(t, dir, "-trigger", "tokyo")
	mustCLI(t, dir, "-trigger", "default-zone")
	log := filepath.Join(dir, "tz.log")
	var got string
	eventually(t, "two runs in tz.log", func() bool {
		b, _ := os.ReadFile(log)
		got = string(b)
		return strings.Count(got, "\n") >= 2
	})
	for _, want := range []string{"tokyo Asia/Tokyo +0900\n", "default-zone UTC\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("tz.log lacks %q:\n%s", want, got)
		}
	}
}
