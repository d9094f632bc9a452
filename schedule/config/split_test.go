package config

import (
	"reflect"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/schedule/internal/bigconfig"
)

// splitTail follows bigconfig's schedules with the layouts a file cut
// into runs must keep: a sub-table of a schedule, a task defined after
// schedules, downstream schedules, and a cron warning.
const splitTail = `
[[schedule]]
name = "sub-tables"
cron = "0 3 * * * *"
task = "late"
[schedule.payload]
customer = "x"
[[schedule.for_each]]
format = "pdf"
[[schedule.for_each]]
format = "csv"

[tasks.late]
command = ["/bin/echo", "{{.customer}}"]

[[schedule]]
name = "downstream"
after = "sub-tables"
task = "late"
payload = { customer = "y" }

[http]
listen = "127.0.0.1:9464"
`

// TestLoadInRunsMatchesWhole: a valid file loaded in runs gives the Config
// that decoding the whole document gives.
func TestLoadInRunsMatchesWhole(t *testing.T) {
	t.Parallel()
	data := bigconfig.String(3*scheduleRunLen+7) + splitTail
	runs := newLoader("big.toml", data).loadInRuns()
	if runs == nil {
		t.Fatal("a valid file did not load in runs")
	}
	l := newLoader("big.toml", data)
	whole := l.load()
	if len(l.errs) > 0 {
		t.Fatal(l.errs)
	}
	if len(runs.Warnings) != 1 || len(runs.Schedules) != 3*scheduleRunLen+8 || len(runs.Downstream) != 1 {
		t.Errorf("%d warnings, %d schedules, %d downstream: want 1, %d, 1", len(runs.Warnings), len(runs.Schedules), len(runs.Downstream), 3*scheduleRunLen+8)
	}
	if !reflect.DeepEqual(runs, whole) {
		t.Error("the Config loaded in runs differs from the whole document's")
	}
}

// TestLoadInRunsLeavesProblems: a file with a problem, or that the
// locator cannot cut into runs, is left to the whole document's decoding.
func TestLoadInRunsLeavesProblems(t *testing.T) {
	t.Parallel()
	good := bigconfig.String(10)
	for name, data := range map[string]string{
		"bad cron":        strings.Replace(good, `cron = "@hourly"`, `cron = "61 * * * *"`, 1),
		"unknown key":     good + "[[schedule]]\nname = \"u\"\ncron = \"@hourly\"\ntask = \"task00\"\ncorn = \"x\"\n",
		"twins":           good + "[[schedule]]\nname = \"u\"\ncron = \"@hourly\"\nCron = \"@daily\"\ntask = \"task00\"\n",
		"duplicate name":  good + "[[schedule]]\nname = \"customer-000001-report\"\ncron = \"@hourly\"\ntask = \"task00\"\n",
		"syntax":          good + "[[schedule]]\nname = \n",
		"orphan table":    "[tasks.t]\ncommand = [\"/bin/echo\"]\n[schedule.payload]\nx = 1\n" + good,
		"schedule table":  "[schedule]\nname = \"x\"\n" + good,
		"inline schedule": "schedule = []\n" + good,
		"no schedules":    "[tasks.t]\ncommand = [\"/bin/echo\"]\n",
		"bad http":        good + "[http]\nlisten = 3\n",
	} {
		if cfg := newLoader("f.toml", data).loadInRuns(); cfg != nil {
			t.Errorf("%s: loaded in runs", name)
		}
	}
}
