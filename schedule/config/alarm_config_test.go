package config

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// TestLoadAlarmKeys: start_within, deadline and notify default to their
// [scheduler] keys; a schedule's own keys win, and notify = [] turns the
// notifications off.
func TestLoadAlarmKeys(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
[scheduler]
start_within = "5m"
deadline = "1h"
notify = ["ops"]
[tasks.t]
[tasks.ops]
[tasks.page-ops]
[[schedule]]
name = "default"
cron = "0 3 * * *"
task = "t"
[[schedule]]
name = "own"
cron = "0 3 * * *"
task = "t"
start_within = "10m"
deadline = "2h"
notify = ["page-ops", "ops"]
[[schedule]]
name = "quiet"
cron = "0 3 * * *"
task = "t"
notify = []
`)
	tests := []struct {
		name        string
		startWithin time.Duration
		deadline    time.Duration
		notify      []string
	}{
		{"default", 5 * time.Minute, time.Hour, []string{"ops"}},
		{"own", 10 * time.Minute, 2 * time.Hour, []string{"page-ops", "ops"}},
		{"quiet", 5 * time.Minute, time.Hour, []string{}},
	}
	for _, tt := range tests {
		s, _ := cfg.Schedule(tt.name)
		if s.StartWithin != tt.startWithin || s.Deadline != tt.deadline || !slices.Equal(s.Notify, tt.notify) {
			t.Errorf("%s: start_within %s, deadline %s, notify %q; want %s, %s, %q",
				tt.name, s.StartWithin, s.Deadline, s.Notify, tt.startWithin, tt.deadline, tt.notify)
		}
		if !s.Watched() {
			t.Errorf("%s: not watched", tt.name)
		}
	}
	plain := mustParse(t, "[tasks.t]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n")
	if plain.Schedules[0].Watched() {
		t.Error("a schedule without alarm keys is watched")
	}
}

// TestLoadAlarmErrors checks each problem of the alarm keys, and that its
// message names the file, the line, the table and the field.
func TestLoadAlarmErrors(t *testing.T) {
	t.Parallel()
	const head = "[tasks.t]\n[tasks.ops]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n"
	tests := []struct {
		name string
		file string
		want string
	}{
		{"unknown notify task", head + "notify = [\"opz\"]\n",
			`t.toml:7: schedule "a": field notify: task "opz" is not defined (did you mean "ops"?)`},
		{"notify task twice", head + "notify = [\"ops\", \"ops\"]\n",
			`t.toml:7: schedule "a": field notify: task "ops" is named twice`},
		{"unknown default notify task", "[scheduler]\nnotify = [\"pager\"]\n" + head,
			`t.toml:2: scheduler: field notify: task "pager" is not defined: add a [tasks.pager] table`},
		{"notify not an array", head + "notify = \"ops\"\n",
			`t.toml:7: schedule "a": field notify: wrong type: want an array of strings, got a string`},
		{"zero deadline", head + "deadline = \"0s\"\n",
			`t.toml:7: schedule "a": field deadline: duration must be positive`},
		{"negative start_within", head + "start_within = \"-5m\"\n",
			`t.toml:7: schedule "a": field start_within: duration -5m0s is negative`},
		{"start_within not shorter than deadline", head + "start_within = \"1h\"\ndeadline = \"1h\"\n",
			`t.toml:7: schedule "a": field start_within: start_within 1h0m0s is not shorter than deadline 1h0m0s`},
		{"deadline shorter than default start_within", "[scheduler]\nstart_within = \"2h\"\n" + head + "deadline = \"1h\"\n",
			`t.toml:9: schedule "a": field deadline: start_within 2h0m0s is not shorter than deadline 1h0m0s`},
		{"defaults in conflict", "[scheduler]\nstart_within = \"2h\"\ndeadline = \"1h\"\n",
			`t.toml:2: scheduler: field start_within: start_within 2h0m0s is not shorter than deadline 1h0m0s`},
		{"renotify below a second", head + "notify = [\"ops\"]\nrenotify = \"500ms\"\n",
			`t.toml:8: schedule "a": field renotify: duration 500ms is shorter than 1s ("0s" turns reminders off)`},
		{"negative default renotify", "[scheduler]\nrenotify = \"-1h\"\n",
			`t.toml:2: scheduler: field renotify: duration -1h0m0s is negative`},
		{"renotify without notify", head + "renotify = \"1h\"\n",
			`t.toml:7: schedule "a": field renotify: the schedule notifies no task: give it notify tasks, or drop renotify`},
		{"renotify not a duration", head + "notify = [\"ops\"]\nrenotify = 3600\n",
			`t.toml:8: schedule "a": field renotify: wrong type: want a string, got an integer`},
		{"bad default deadline", "[scheduler]\ndeadline = \"soon\"\n",
			`t.toml:2: scheduler: field deadline: "soon" is not a duration such as 90s or 1h30m`},
		{"notify template reads a key alarms lack", "[tasks.page]\ncommand = [\"notify\", \"{{.schedule}}\", \"{{.customer}}\"]\n" + head + "notify = [\"page\"]\n",
			`t.toml:2: task "page": field command: argument 2 "{{.customer}}": the payload of an alarm it is notified of has no key "customer"; it has count, deadline, first, incident, incident_kind, instant, item, job_id, kind, last, last_error, last_success, notice, schedule, skipped`},
		{"default notify template misspelt, reported once", "[scheduler]\nnotify = [\"page\"]\n[tasks.page]\ncommand = [\"notify\", \"{{.schedul}}\"]\n" + head + "[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"t\"\nnotify = [\"page\"]\n",
			`t.toml:4: task "page": field command: argument 1 "{{.schedul}}": the payload of an alarm it is notified of has no key "schedul" (did you mean "schedule"?); it has count, deadline, first, incident, incident_kind, instant, item, job_id, kind, last, last_error, last_success, notice, schedule, skipped`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("t.toml", []byte(tt.file))
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, want Errors", err)
			}
			if len(errs) != 1 {
				t.Errorf("Parse found %d problems, want 1:\n%v", len(errs), err)
			}
			if got := errs[0].Error(); got != tt.want {
				t.Errorf("Parse error =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestNotifyTemplatesReadEveryAlarmKey: a notify command may read every
// key of an alarm's payload, skipped included whatever the kind.
func TestNotifyTemplatesReadEveryAlarmKey(t *testing.T) {
	t.Parallel()
	mustParse(t, `[tasks.t]
[tasks.page]
command = ["notify", "{{.schedule}}", "{{.item}}", "{{.instant}}", "{{.kind}}", "{{.deadline}}", "{{.last_success}}", "{{.job_id}}", "{{.last_error}}", "{{.skipped}}"]
[[schedule]]
name = "a"
cron = "@daily"
task = "t"
deadline = "1h"
notify = ["page"]
`)
}

// TestLoadRenotify: renotify defaults to [scheduler]'s, none when absent;
// a schedule's own wins, and "0s" turns reminders off.
func TestLoadRenotify(t *testing.T) {
	t.Parallel()
	const schedules = `[tasks.t]
[tasks.ops]
[[schedule]]
name = "default"
cron = "@daily"
task = "t"
notify = ["ops"]
[[schedule]]
name = "own"
cron = "@daily"
task = "t"
notify = ["ops"]
renotify = "15m"
[[schedule]]
name = "off"
cron = "@daily"
task = "t"
notify = ["ops"]
renotify = "0s"
`
	tests := []struct {
		name, head, schedule string
		want                 time.Duration
	}{
		{"no default", "", "default", 0},
		{"no default, own", "", "own", 15 * time.Minute},
		{"default", "[scheduler]\nrenotify = \"1h\"\n", "default", time.Hour},
		{"default, own", "[scheduler]\nrenotify = \"1h\"\n", "own", 15 * time.Minute},
		{"default, off", "[scheduler]\nrenotify = \"1h\"\n", "off", 0},
	}
	for _, tt := range tests {
		cfg := mustParse(t, tt.head+schedules)
		if s, _ := cfg.Schedule(tt.schedule); s.Renotify != tt.want {
			t.Errorf("%s: %s's Renotify = %s, want %s", tt.name, tt.schedule, s.Renotify, tt.want)
		}
	}
}
