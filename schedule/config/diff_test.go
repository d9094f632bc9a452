package config

import (
	"reflect"
	"testing"
)

// TestCompareNamesWhatChanged: a reload's difference lists the tasks and
// [scheduler] keys it changes as well as the schedules, and for each
// changed schedule or task the keys that differ.
func TestCompareNamesWhatChanged(t *testing.T) {
	t.Parallel()
	old := mustParse(t, `
[scheduler]
workers = 2
timezone = "UTC"
[tasks.report]
command = ["./r.sh", "{{.customer}}"]
max_attempts = 3
[tasks.hook]
url = "https://example.com/a"
[tasks.gone]
[[schedule]]
name = "nightly"
cron = "0 3 * * *"
task = "report"
payload = { format = "pdf" }
for_each = [ { customer = "acme" } ]
[[schedule]]
name = "same"
cron = "@daily"
task = "hook"
`)
	new := mustParse(t, `
[scheduler]
workers = 4
timezone = "Europe/Istanbul"
lease = "2m"
[tasks.report]
command = ["./r.sh", "--customer", "{{.customer}}"]
max_attempts = 3
backoff = "10s"
[tasks.hook]
url = "https://example.com/a"
[tasks.fresh]
[[schedule]]
name = "nightly"
cron = "0 3 * * *"
task = "report"
payload = { format = "csv" }
for_each = [ { customer = "acme" }, { customer = "globex" } ]
overlap = "skip"
[[schedule]]
name = "same"
cron = "@daily"
timezone = "UTC"
task = "hook"
`)
	got := Compare(old, new)
	want := Diff{
		Changed:      []string{"nightly"},
		Fields:       map[string][]string{"nightly": {"for_each", "overlap", "payload", "timezone"}},
		TasksAdded:   []string{"fresh"},
		TasksChanged: []string{"report"},
		TasksRemoved: []string{"gone"},
		TaskFields:   map[string][]string{"report": {"backoff", "command"}},
		Scheduler:    []string{"lease", "timezone", "workers"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Compare =\n%+v\nwant\n%+v", got, want)
	}
	if d := Compare(new, new); !d.Empty() {
		t.Errorf("Compare of a config with itself = %+v, want empty", d)
	}
	if d := Compare(old, mustParse(t, "[tasks.t]\n")); d.Empty() || len(d.Removed) != 2 || len(d.TasksRemoved) != 3 {
		t.Errorf("Compare with everything removed = %+v", d)
	}
}
