package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/scheduler-run/scheduler/schedule/cron"
)

func TestLoadExample(t *testing.T) {
	t.Parallel()
	cfg, err := Load("testdata/schedules.toml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got, want := cfg.File, "testdata/schedules.toml"; got != want {
		t.Errorf("File = %q, want %q", got, want)
	}
	sc := cfg.Scheduler
	if sc.DB != "scheduler.db" || sc.Workers != 8 || sc.Timezone != time.UTC || sc.RetainDone != 168*time.Hour ||
		sc.MaintenanceEvery != time.Hour || sc.ShutdownGrace != DefaultShutdownGrace || sc.MisfireGrace != DefaultMisfireGrace {
		t.Errorf("Scheduler = %+v", sc)
	}
	report := cfg.Tasks["report"]
	if report == nil {
		t.Fatalf("no task report in %v", cfg.Tasks)
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	// The program, ./examples/report.sh in the file, is taken from its
	// directory.
	if got, want := strings.Join(report.Command, " "), testdata+"/examples/report.sh --customer {{.customer}}"; got != want {
		t.Errorf("report.Command = %q, want %q", got, want)
	}
	if report.Timeout != 15*time.Minute || report.MaxAttempts != 5 || report.Backoff != 30*time.Second ||
		report.MaxBackoff != time.Hour || report.Concurrency != 2 || len(report.PermanentExitCodes) != 1 || report.PermanentExitCodes[0] != 65 {
		t.Errorf("report = %+v", report)
	}
	if tc := report.TypeConfig(); tc.Timeout != 15*time.Minute || tc.Concurrency != 2 || tc.Backoff != 30*time.Second || tc.MaxBackoff != time.Hour {
		t.Errorf("report.TypeConfig() = %+v", tc)
	}
	ping := cfg.Tasks["ping"]
	if ping.URL != "https://example.com/hook" || ping.Method != "POST" || ping.Headers["Authorization"] != "Bearer x" || !ping.FollowRedirects ||
		ping.MaxAttempts != DefaultMaxAttempts || ping.Backoff != DefaultBackoff || ping.MaxBackoff != DefaultMaxBackoff {
		t.Errorf("ping = %+v", ping)
	}

	if len(cfg.Schedules) != 2 {
		t.Fatalf("%d schedules, want 2", len(cfg.Schedules))
	}
	s, ok := cfg.Schedule("nightly-report")
	if !ok || s != cfg.Schedules[0] {
		t.Fatalf("Schedule(nightly-report) = %v, %v", s, ok)
	}
	if s.Cron != "0 3 * * *" || s.Location.String() != "Europe/Istanbul" || s.Task != "report" ||
		s.CatchUp != cron.CatchUpLatest || s.CatchUpLimit != DefaultCatchUpLimit || s.Overlap != OverlapSkip {
		t.Errorf("nightly-report = %+v", s)
	}
	items := s.Items()
	wantItems := []Item{
		{ID: "customer=acme", Payload: json.RawMessage(`{"customer":"acme","format":"pdf"}`)},
		{ID: "customer=globex", Payload: json.RawMessage(`{"customer":"globex","format":"pdf"}`)},
	}
	if len(items) != len(wantItems) {
		t.Fatalf("Items() = %v, want %v", items, wantItems)
	}
	for i := range items {
		if items[i].ID != wantItems[i].ID || string(items[i].Payload) != string(wantItems[i].Payload) {
			t.Errorf("Items()[%d] = %s %s, want %s %s", i, items[i].ID, items[i].Payload, wantItems[i].ID, wantItems[i].Payload)
		}
	}
	if string(s.Payload) != `{"format":"pdf"}` || len(s.ForEach) != 2 || string(s.ForEach[0]) != `{"customer":"acme"}` || string(s.ForEach[1]) != `{"customer":"globex"}` {
		t.Errorf("nightly-report payload %s, for_each %s; want the tables as JSON", s.Payload, s.ForEach)
	}
	hb, _ := cfg.Schedule("heartbeat")
	if hb.Payload != nil || hb.ForEach != nil {
		t.Errorf("heartbeat payload %s, for_each %s; want none", hb.Payload, hb.ForEach)
	}
	if hb.Expr().Every() != 5*time.Minute || hb.Overlap != OverlapAllow || len(hb.Items()) != 1 || hb.Items()[0].ID != "" || string(hb.Items()[0].Payload) != "{}" {
		t.Errorf("heartbeat = %+v items %v", hb, hb.Items())
	}
	if _, ok := cfg.Schedule("nope"); ok {
		t.Errorf("Schedule(nope) found")
	}
}

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, "")
	want := Scheduler{DB: DefaultDB, Timezone: time.UTC, RetainDone: DefaultRetainDone, MaintenanceEvery: DefaultMaintenanceEvery,
		ShutdownGrace: DefaultShutdownGrace, MisfireGrace: DefaultMisfireGrace, Lease: DefaultLease}
	if !reflect.DeepEqual(cfg.Scheduler, want) {
		t.Errorf("Scheduler = %+v, want %+v", cfg.Scheduler, want)
	}
	if len(cfg.Tasks) != 0 || len(cfg.Schedules) != 0 {
		t.Errorf("Tasks %v, Schedules %v, want none", cfg.Tasks, cfg.Schedules)
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want os.ErrNotExist", err)
	}
}

func TestLoadZones(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
[scheduler]
timezone = "America/New_York"
[tasks.t]
[[schedule]]
name = "default"
cron = "0 3 * * *"
task = "t"
[[schedule]]
name = "field"
cron = "0 3 * * *"
timezone = "Asia/Kolkata"
task = "t"
[[schedule]]
name = "prefix"
cron = "CRON_TZ=Australia/Lord_Howe 0 3 * * *"
task = "t"
`)
	for name, want := range map[string]string{"default": "America/New_York", "field": "Asia/Kolkata", "prefix": "Australia/Lord_Howe"} {
		s, _ := cfg.Schedule(name)
		if got := s.Location.String(); got != want {
			t.Errorf("%s: Location = %s, want %s", name, got, want)
		}
		if got := s.Next(t0).Location().String(); got != want {
			t.Errorf("%s: Next location = %s, want %s", name, got, want)
		}
	}
}

// TestLoadErrors checks each problem the loader reports, and that its
// message names the file, the line, the table and the field.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	const task = "[tasks.t]\n"
	tests := []struct {
		name string
		file string
		want string
	}{
		{"syntax", "[scheduler\nworkers = 1\n",
			`t.toml:2: expected '.' or ']' to end table name, but got '\n' instead`},
		{"unknown scheduler key", "[scheduler]\nworkers = 2\nworker = 3\n",
			`t.toml:3: scheduler: unknown key "worker" (did you mean "workers"?)`},
		{"misspelt task key", "[tasks.t]\ncommand = [\"true\"]\nmax_atempts = 3\n",
			`t.toml:3: task "t": unknown key "max_atempts" (did you mean "max_attempts"?)`},
		{"misspelt table", "[[schedules]]\nname = \"a\"\n",
			`t.toml: unknown key "schedules" (did you mean "schedule" or "scheduler"?)`},
		{"misspelt zone", "[scheduler]\ntimezone = \"Europe/Instanbul\"\n",
			`t.toml:2: scheduler: field timezone: unknown time zone "Europe/Instanbul" (did you mean "Europe/Istanbul"?)`},
		{"misspelt prefix zone", task + "[[schedule]]\nname = \"a\"\ncron = \"CRON_TZ=Europe/Berln 0 3 * * *\"\ntask = \"t\"\n",
			`t.toml:4: schedule "a": field cron: unknown time zone "Europe/Berln" (did you mean "Europe/Berlin"?)`},
		{"misspelt task", "[tasks.report]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"reprot\"\n",
			`t.toml:5: schedule "a": field task: task "reprot" is not defined (did you mean "report"?)`},
		{"unknown table", task + "[jobs.nightly]\ncron = \"0 3 * * *\"\n",
			`t.toml:2: unknown key "jobs"`},
		{"unknown top-level key", "version = 2\n",
			`t.toml:1: unknown key "version"`},
		{"unknown task key", "[tasks.t]\ncommand = [\"true\"]\nretries = 3\n",
			`t.toml:3: task "t": unknown key "retries"`},
		{"unknown schedule key", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nenabled = true\n",
			`t.toml:6: schedule "a": unknown key "enabled"`},
		{"key in wrong case", task + "[[schedule]]\nname = \"a\"\nCron = \"@daily\"\ntask = \"t\"\n",
			`t.toml:4: schedule "a": unknown key "Cron" (keys are case-sensitive: "cron")`},
		{"unknown key in second schedule", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"t\"\nextra = 1\n",
			`t.toml:10: schedule "b": unknown key "extra"`},
		{"bad cron", task + "[[schedule]]\nname = \"a\"\ncron = \"61 * * * *\"\ntask = \"t\"\n",
			`t.toml:4: schedule "a": field cron: minute field "61": 61 is above the maximum 59`},
		{"bad cron in first of two schedules", task + "[[schedule]]\nname = \"a\"\ncron = \"x\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"t\"\n",
			`t.toml:4: schedule "a": field cron: expected 5 to 6 fields, found 1: [x]`},
		{"cron never fires", task + "[[schedule]]\nname = \"a\"\ncron = \"0 0 31 2 *\"\ntask = \"t\"\n",
			`t.toml:4: schedule "a": field cron: spec never fires`},
		{"every too short", task + "[[schedule]]\nname = \"a\"\ncron = \"@every 100ms\"\ntask = \"t\"\n",
			`t.toml:4: schedule "a": field cron: @every 100ms: the period must be at least 1s`},
		{"after unknown", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\nafter = \"aa\"\ntask = \"t\"\n",
			`t.toml:8: schedule "b": field after: unknown schedule "aa" (did you mean "a"?)`},
		{"after and cron", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\nafter = \"a\"\ntask = \"t\"\n",
			`t.toml:9: schedule "b": field after: a schedule has either cron or after, not both`},
		{"after itself", task + "[[schedule]]\nname = \"b\"\nafter = \"b\"\ntask = \"t\"\n",
			`t.toml:4: schedule "b": field after: schedule "b" cannot follow itself`},
		{"after cycle", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\nafter = \"c\"\ntask = \"t\"\n[[schedule]]\nname = \"c\"\nafter = \"d\"\ntask = \"t\"\n[[schedule]]\nname = \"d\"\nafter = \"b\"\ntask = \"t\"\n",
			`t.toml:8: schedule "b": field after: a cycle of after: b after c after d after b`},
		{"bad require", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\nafter = \"a\"\nrequire = \"all\"\ntask = \"t\"\n",
			`t.toml:9: schedule "b": field require: "all": want "ended" or "done"`},
		{"after with for_each", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\nafter = \"a\"\ntask = \"t\"\nfor_each = [ { n = 1 } ]\n",
			`t.toml:10: schedule "b": field for_each: a schedule with after runs once per upstream instant: for_each does not apply`},
		{"cron missing", task + "[[schedule]]\nname = \"a\"\ntask = \"t\"\n",
			`t.toml:2: schedule "a": field cron: missing`},
		{"cron wrong type", task + "[[schedule]]\nname = \"a\"\ncron = 5\ntask = \"t\"\n",
			`t.toml:4: schedule "a": field cron: wrong type: want a string, got an integer`},
		{"unknown schedule zone", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntimezone = \"Mars/Olympus\"\ntask = \"t\"\n",
			`t.toml:5: schedule "a": field timezone: unknown time zone "Mars/Olympus"`},
		{"unknown scheduler zone", "[scheduler]\ntimezone = \"Europe/Atlantis\"\n",
			`t.toml:2: scheduler: field timezone: unknown time zone "Europe/Atlantis"`},
		{"local zone", "[scheduler]\ntimezone = \"Local\"\n",
			`t.toml:2: scheduler: field timezone: unknown time zone "Local": want an IANA name such as Europe/Berlin or UTC`},
		{"unknown prefix zone", task + "[[schedule]]\nname = \"a\"\ncron = \"CRON_TZ=Nowhere 0 3 * * *\"\ntask = \"t\"\n",
			`t.toml:4: schedule "a": field cron: unknown time zone "Nowhere"`},
		{"prefix and timezone", task + "[[schedule]]\nname = \"a\"\ncron = \"CRON_TZ=UTC 0 3 * * *\"\ntimezone = \"UTC\"\ntask = \"t\"\n",
			`t.toml:5: schedule "a": field timezone: cron has a CRON_TZ= prefix: give the zone once`},
		{"bad duration", "[tasks.t]\ntimeout = \"5 minutes\"\n",
			`t.toml:2: task "t": field timeout: "5 minutes" is not a duration such as 90s or 1h30m`},
		{"negative duration", "[scheduler]\nretain_done = \"-1h\"\n",
			`t.toml:2: scheduler: field retain_done: duration -1h0m0s is negative`},
		{"zero period", "[scheduler]\nmaintenance_every = \"0s\"\n",
			`t.toml:2: scheduler: field maintenance_every: duration must be positive`},
		{"short misfire grace", "[scheduler]\nmisfire_grace = \"10ms\"\n",
			`t.toml:2: scheduler: field misfire_grace: duration 10ms is shorter than 1s`},
		{"short lease", "[scheduler]\nlease = \"100ms\"\n",
			`t.toml:2: scheduler: field lease: duration 100ms is shorter than 1s`},
		{"bad kill grace", "[tasks.t]\ncommand = [\"true\"]\nkill_grace = \"-1s\"\n",
			`t.toml:3: task "t": field kill_grace: duration -1s is negative`},
		{"wrong type", "[scheduler]\nworkers = \"eight\"\n",
			`t.toml:2: scheduler: field workers: wrong type: want an integer, got a string`},
		{"negative workers", "[scheduler]\nworkers = -1\n",
			`t.toml:2: scheduler: field workers: -1 workers: want 0 (the default) to 10000`},
		{"absurd workers", "[scheduler]\nworkers = 1000000000\n",
			`t.toml:2: scheduler: field workers: 1000000000 workers: want 0 (the default) to 10000`},
		{"empty db", "[scheduler]\ndb = \"\"\n",
			`t.toml:2: scheduler: field db: empty database path`},
		{"scheduler not a table", "scheduler = 5\n",
			`t.toml:1: scheduler: wrong type: want a table, got an integer`},
		{"tasks not a table", "tasks = \"x\"\n",
			`t.toml:1: field tasks: wrong type: want a table, got a string`},
		{"schedule not tables", "schedule = [1]\n",
			`t.toml:1: schedule #1: wrong type: want a table, got an integer`},
		{"undefined task", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"report\"\n",
			`t.toml:5: schedule "a": field task: task "report" is not defined: add a [tasks.report] table`},
		{"task missing", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\n",
			`t.toml:2: schedule "a": field task: missing`},
		{"duplicate names", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n\n[[schedule]]\nname = \"a\"\ncron = \"@hourly\"\ntask = \"t\"\n",
			`t.toml:8: schedule "a": field name: schedule "a" is already defined on line 3`},
		{"name missing", task + "[[schedule]]\ncron = \"@daily\"\ntask = \"t\"\n",
			`t.toml:2: schedule #1: field name: missing`},
		{"bad name", task + "[[schedule]]\nname = \"a|b\"\ncron = \"@daily\"\ntask = \"t\"\n",
			`t.toml:3: schedule #1: field name: name "a|b": use 1 to 128 letters, digits and -_.:@/`},
		{"bad task name", "[tasks.\"my task\"]\n",
			`t.toml:1: task "my task": task name "my task": use 1 to 128 letters, digits and -_.:@/`},
		{"empty for_each item", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nfor_each = [ { c = 1 }, {} ]\n",
			`t.toml:6: schedule "a": field for_each: item 2 is empty`},
		{"empty for_each", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nfor_each = []\n",
			`t.toml:6: schedule "a": field for_each: empty: leave for_each out for a single run per instant`},
		{"repeated for_each item", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nfor_each = [ { c = 1 }, { c = 2 }, { c = 1 } ]\n",
			`t.toml:6: schedule "a": field for_each: item 3 repeats item 1 (c=1)`},
		{"for_each not tables", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nfor_each = [ 1, 2 ]\n",
			`t.toml:6: schedule "a": field for_each: wrong type: want an array of tables, got an array of integers`},
		{"payload not a table", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\npayload = 5\n",
			`t.toml:6: schedule "a": field payload: wrong type: want a table, got an integer`},
		{"env not strings", "[tasks.t]\ncommand = [\"true\"]\nenv = { A = 1 }\n",
			`t.toml:3: task "t": field env: wrong type: want a table of strings, got a table`},
		{"command not strings", "[tasks.t]\ncommand = [\"true\", 1]\n",
			`t.toml:2: task "t": field command: wrong type: want an array of strings, got a mixed array`},
		{"payload not json", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { x = nan }\n",
			`t.toml:6: schedule "a": field payload: json: unsupported value: NaN`},
		{"bad catch_up", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\ncatch_up = \"some\"\n",
			`t.toml:6: schedule "a": field catch_up: "some" is not a catch-up policy: want latest, all or none`},
		{"bad overlap", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\noverlap = \"queue\"\n",
			`t.toml:6: schedule "a": field overlap: "queue" is not an overlap policy: want allow or skip`},
		{"limit without all", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\ncatch_up_limit = 5\n",
			`t.toml:6: schedule "a": field catch_up_limit: applies only to catch_up = "all"`},
		{"limit out of range", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\ncatch_up = \"all\"\ncatch_up_limit = 0\n",
			`t.toml:7: schedule "a": field catch_up_limit: 0: want 1 to 10000`},
		{"command and url", "[tasks.t]\ncommand = [\"true\"]\nurl = \"https://example.com\"\n",
			`t.toml:3: task "t": field url: a task has a command or a url, not both`},
		{"empty command", "[tasks.t]\ncommand = []\n",
			`t.toml:2: task "t": field command: empty command`},
		{"command template syntax", "[tasks.t]\ncommand = [\"echo\", \"{{.x\"]\n",
			`t.toml:2: task "t": field command: argument 1 "{{.x": template: argv[1]:1: unclosed action`},
		{"command template key missing from item", "[tasks.t]\ncommand = [\"echo\", \"{{.customer}}\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nfor_each = [ { customer = \"acme\" }, { client = \"globex\" } ]\n",
			`t.toml:2: task "t": field command: argument 1 "{{.customer}}": item 2 (client=globex) of schedule "a" (line 7) has no key "customer"; it has client`},
		{"command template key misspelt", "[tasks.t]\ncommand = [\"echo\", \"{{.custmer}}\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { f = 1 }\nfor_each = [ { customer = \"acme\" }, { customer = \"globex\" } ]\n",
			`t.toml:2: task "t": field command: argument 1 "{{.custmer}}": item 1 (customer=acme) of schedule "a" (line 8) has no key "custmer" (did you mean "customer"?); it has customer, f; 1 other item fails too`},
		{"command template nested key missing", "[tasks.t]\ncommand = [\"echo\", \"{{.db.name}}\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { db = { host = \"h\" } }\n",
			`t.toml:2: task "t": field command: argument 1 "{{.db.name}}": the payload of schedule "a" (line 7) has no key "db.name"; "db" has host`},
		{"command template key missing, no payload", "[tasks.t]\ncommand = [\"echo\", \"{{.customer}}\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n",
			`t.toml:2: task "t": field command: argument 1 "{{.customer}}": the payload of schedule "a" (line 3) has no key "customer"; it has no keys`},
		{"command template other failure", "[tasks.t]\ncommand = [\"echo\", \"{{.n.x}}\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { n = 5 }\n",
			`t.toml:2: task "t": field command: argument 1 "{{.n.x}}" over the payload of schedule "a" (line 7): template: argv[1]:1:4: executing "argv[1]" at <.n.x>: can't evaluate field x in type interface {}`},
		{"command template key missing from payload", "[tasks.t]\ncommand = [\"echo\", \"{{.customer}}\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { client = \"x\" }\n",
			`t.toml:2: task "t": field command: argument 1 "{{.customer}}": the payload of schedule "a" (line 7) has no key "customer"; it has client`},
		{"env on a url task", "[tasks.t]\nurl = \"https://example.com\"\nenv = { A = \"1\" }\n",
			`t.toml:3: task "t": field env: applies only to a task with a command`},
		{"method on a command task", "[tasks.t]\ncommand = [\"true\"]\nmethod = \"GET\"\n",
			`t.toml:3: task "t": field method: applies only to a task with a url`},
		{"reserved env", "[tasks.t]\ncommand = [\"true\"]\nenv = { SCHEDULER_JOB_ID = \"1\" }\n",
			`t.toml:3: task "t": field env: variable SCHEDULER_JOB_ID: names starting with SCHEDULER_ are reserved`},
		{"bad url", "[tasks.t]\nurl = \"ftp://example.com/x\"\n",
			`t.toml:2: task "t": field url: url ftp://example.com/x: scheme must be http or https`},
		{"bad url with a key in its query", "[tasks.t]\nurl = \"ftp://u:pw@example.com/x?apikey=s3cr3t&v=2#frag\"\n",
			`t.toml:2: task "t": field url: url ftp://u:xxxxx@example.com/x?apikey=[redacted]&v=[redacted]#[redacted]: scheme must be http or https`},
		{"unparsable url with a key in its query", "[tasks.t]\nurl = \"https://example.com/x?apikey=s3cr3t%zz\\n\"\n",
			`t.toml:2: task "t": field url: invalid url: parse "https://example.com/x?apikey=[redacted]": net/url: invalid control character in URL`},
		{"bad method", "[tasks.t]\nurl = \"https://example.com\"\nmethod = \"GET IT\"\n",
			`t.toml:3: task "t": field method: "GET IT" is not an http method`},
		{"follow_redirects on a command task", "[tasks.t]\ncommand = [\"true\"]\nfollow_redirects = true\n",
			`t.toml:3: task "t": field follow_redirects: applies only to a task with a url`},
		{"follow_redirects not a boolean", "[tasks.t]\nurl = \"https://example.com\"\nfollow_redirects = \"yes\"\n",
			`t.toml:3: task "t": field follow_redirects: wrong type: want a boolean, got a string`},
		{"follow_redirects misspelt", "[tasks.t]\nurl = \"https://example.com\"\nfollow_redirect = true\n",
			`t.toml:3: task "t": unknown key "follow_redirect" (did you mean "follow_redirects"?)`},
		{"bad exit code", "[tasks.t]\ncommand = [\"true\"]\npermanent_exit_codes = [0]\n",
			`t.toml:3: task "t": field permanent_exit_codes: exit code 0 is not in 1-255`},
		{"memory_max not a size", "[tasks.t]\ncommand = [\"true\"]\nmemory_max = \"lots\"\n",
			`t.toml:3: task "t": field memory_max: "lots" is not a size such as 512MiB, 2G or 1048576`},
		{"memory_max in decimal units", "[tasks.t]\ncommand = [\"true\"]\nmemory_max = \"512MB\"\n",
			`t.toml:3: task "t": field memory_max: "512MB": decimal units are ambiguous here; write KiB, MiB, GiB or TiB (powers of 1024)`},
		{"memory_max too small", "[tasks.t]\ncommand = [\"true\"]\nmemory_max = \"64K\"\n",
			`t.toml:3: task "t": field memory_max: 65536 bytes is less than the smallest memory_max, 1MiB`},
		{"memory_max too large", "[tasks.t]\ncommand = [\"true\"]\nmemory_max = \"99999999999T\"\n",
			`t.toml:3: task "t": field memory_max: "99999999999T" is too large`},
		{"memory_max on a url task", "[tasks.t]\nurl = \"https://example.com\"\nmemory_max = \"1G\"\n",
			`t.toml:3: task "t": field memory_max: applies only to a task with a command`},
		{"cpu_time_max below a second", "[tasks.t]\ncommand = [\"true\"]\ncpu_time_max = \"500ms\"\n",
			`t.toml:3: task "t": field cpu_time_max: duration 500ms is shorter than 1s`},
		{"cpu_time_max in part seconds", "[tasks.t]\ncommand = [\"true\"]\ncpu_time_max = \"1.5s\"\n",
			`t.toml:3: task "t": field cpu_time_max: 1.5s is not a whole number of seconds, the unit of the limit`},
		{"cpu_time_max on a go task", "[tasks.t]\ncpu_time_max = \"1m\"\n",
			`t.toml:2: task "t": field cpu_time_max: applies only to a task with a command`},
		{"open_files_max too small", "[tasks.t]\ncommand = [\"true\"]\nopen_files_max = 3\n",
			`t.toml:3: task "t": field open_files_max: 3 open files: want 4 to 1048576 (the standard streams take three)`},
		{"open_files_max not an integer", "[tasks.t]\ncommand = [\"true\"]\nopen_files_max = \"64\"\n",
			`t.toml:3: task "t": field open_files_max: wrong type: want an integer, got a string`},
		{"retry_over_limit not a boolean", "[tasks.t]\ncommand = [\"true\"]\nretry_over_limit = 1\n",
			`t.toml:3: task "t": field retry_over_limit: wrong type: want a boolean, got an integer`},
		{"give_up_after zero", "[tasks.t]\ngive_up_after = \"0s\"\n",
			`t.toml:2: task "t": field give_up_after: duration must be positive`},
		{"give_up_after not a duration", "[tasks.t]\ngive_up_after = \"6 hours\"\n",
			`t.toml:2: task "t": field give_up_after: "6 hours" is not a duration such as 90s or 1h30m`},
		{"rate not a rate", "[tasks.t]\nrate = \"ten a minute\"\n",
			`t.toml:2: task "t": field rate: "ten a minute" is not a rate such as 10/1m (10 starts a minute) or 2/s`},
		{"rate of zero", "[tasks.t]\nrate = \"0/1m\"\n",
			`t.toml:2: task "t": field rate: rate "0/1m": want at least 1 start per positive duration`},
		{"rate not a string", "[tasks.t]\nrate = 10\n",
			`t.toml:2: task "t": field rate: wrong type: want a string, got an integer`},
		{"rate_burst zero", "[tasks.t]\nrate = \"10/1m\"\nrate_burst = 0\n",
			`t.toml:3: task "t": field rate_burst: burst 0: want at least 1`},
		{"rate_burst without rate", "[tasks.t]\nrate_burst = 5\n",
			`t.toml:2: task "t": field rate_burst: a burst without a rate: set rate too`},
		{"rate_key without rate", "[tasks.t]\nrate_key = \"{{.customer}}\"\n",
			`t.toml:2: task "t": field rate_key: a key without a rate: set rate too`},
		{"rate_key not a template", "[tasks.t]\nrate = \"2/s\"\nrate_key = \"{{.customer\"\n",
			`t.toml:3: task "t": field rate_key: "{{.customer": template: rate_key:1: unclosed action`},
		{"rate_key over an item without the field", "[tasks.t]\nrate = \"2/s\"\nrate_key = \"{{.customer}}\"\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nfor_each = [{ customer = \"acme\" }, { client = \"globex\" }]\n",
			`t.toml:3: task "t": field rate_key: "{{.customer}}" over item 2 (client=globex) of schedule "a" (line 8): template: rate_key:1:2: executing "rate_key" at <.customer>: map has no entry for key "customer"`},
		{"redact_output not a regexp", "[tasks.t]\ncommand = [\"true\"]\nredact_output = [\"(?i)bearer [a-z\"]\n",
			`t.toml:3: task "t": field redact_output: pattern "(?i)bearer [a-z": error parsing regexp: missing closing ]: ` + "`[a-z`"},
		{"redact_output matching nothing", "[tasks.t]\nredact_output = [\"x*\"]\n",
			`t.toml:2: task "t": field redact_output: pattern "x*" matches the empty string: it would mark every position of the output`},
		{"redact_output not an array", "[tasks.t]\nredact_output = \"bearer .*\"\n",
			`t.toml:2: task "t": field redact_output: wrong type: want an array of strings, got a string`},
		{"redact empty segment", "[tasks.t]\nredact = [\"card..number\"]\n",
			`t.toml:2: task "t": field redact: field "card..number": an empty name between dots`},
		{"redact twice", "[tasks.t]\nredact = [\"token\", \"token\"]\n",
			`t.toml:2: task "t": field redact: field "token" is listed twice`},
		{"redacted field in for_each", "[tasks.t]\nredact = [\"card.number\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\nfor_each = [{ x = 1 }, { card = { number = 4 } }]\n",
			`t.toml:7: schedule "a": field for_each: item 2 sets "card", which task "t" redacts: an item's fields make its name, shown in every job key, log line and page; put the secret in payload instead`},
		{"zero attempts", "[tasks.t]\nmax_attempts = 0\n",
			`t.toml:2: task "t": field max_attempts: 0 attempts: want at least 1`},
		{"log_output not a boolean", "[tasks.t]\ncommand = [\"true\"]\nlog_output = \"yes\"\n",
			`t.toml:3: task "t": field log_output: wrong type: want a boolean, got a string`},
		{"version zero", "[tasks.t]\nversion = 0\n",
			`t.toml:2: task "t": field version: version 0: want 1 or more`},
		{"version not an integer", "[tasks.t]\nversion = \"2\"\n",
			`t.toml:2: task "t": field version: wrong type: want an integer, got a string`},
		{"accepts empty", "[tasks.t]\naccepts = []\n",
			`t.toml:2: task "t": field accepts: no version: list the payload versions this daemon runs, such as [1, 2]`},
		{"accepts version zero", "[tasks.t]\nversion = 2\naccepts = [2, 0]\n",
			`t.toml:3: task "t": field accepts: version 0: want 1 or more`},
		{"accepts a version twice", "[tasks.t]\naccepts = [1, 2, 1]\n",
			`t.toml:2: task "t": field accepts: version 1 is listed twice`},
		{"negative concurrency", "[tasks.t]\nconcurrency = -2\n",
			`t.toml:2: task "t": field concurrency: concurrency -2: want 0 (no limit) or more`},
		{"max backoff below backoff", "[tasks.t]\nbackoff = \"2h\"\n",
			`t.toml:1: task "t": field max_backoff: max_backoff 1h0m0s is shorter than backoff 2h0m0s`},
		{"task table in dotted form", "[tasks]\nt = { timeout = \"soon\" }\n",
			`t.toml:2: task "t": field timeout: "soon" is not a duration such as 90s or 1h30m`},
		{"schedule payload subtable", task + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[schedule.payload]\nx = 1\n[schedule.bogus]\ny = 2\n",
			`t.toml:8: schedule "a": unknown key "bogus"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("t.toml", []byte(tt.file))
			if cfg != nil {
				t.Errorf("Parse returned a Config with an error")
			}
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

func TestLoadErrorFields(t *testing.T) {
	t.Parallel()
	_, err := Parse("t.toml", []byte("[tasks.t]\n[[schedule]]\nname = \"a\"\ncron = \"0 0 31 2 *\"\ntask = \"t\"\n"))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("Parse = %v, want a *Error", err)
	}
	want := Error{File: "t.toml", Line: 4, Table: "schedule", Job: "a", Field: "cron"}
	if ce.File != want.File || ce.Line != want.Line || ce.Table != want.Table || ce.Job != want.Job || ce.Field != want.Field {
		t.Errorf("Error = %+v, want %+v", *ce, want)
	}
	if !errors.Is(err, cron.ErrNeverFires) {
		t.Errorf("errors.Is(%v, ErrNeverFires) = false", err)
	}
	var pe toml.ParseError
	_, err = Parse("t.toml", []byte("a = [\n"))
	if !errors.As(err, &pe) {
		t.Errorf("syntax error %v does not unwrap to a toml.ParseError", err)
	}
}

// TestLoadAllErrorsAtOnce checks that one pass reports every problem, in
// line order.
func TestLoadAllErrorsAtOnce(t *testing.T) {
	t.Parallel()
	const file = `[scheduler]
workers = "eight"
timezone = "Mars/Base"
bogus = 1

[tasks.report]
command = ["./r.sh", "{{.oops"]
url = "ftp://x"

[[schedule]]
name = "a"
cron = "0 0 31 2 *"
task = "nope"

[[schedule]]
name = "a"
cron = "@hourly"
task = "report"
for_each = [ {} ]
overlap = "never"

[[schedule]]
cron = "61 * * * *"
task = "report"
`
	want := []string{
		`t.toml:2: scheduler: field workers: wrong type: want an integer, got a string`,
		`t.toml:3: scheduler: field timezone: unknown time zone "Mars/Base"`,
		`t.toml:4: scheduler: unknown key "bogus"`,
		`t.toml:7: task "report": field command: argument 1 "{{.oops": template: argv[1]:1: unclosed action`,
		`t.toml:8: task "report": field url: a task has a command or a url, not both`,
		`t.toml:8: task "report": field url: url ftp://x: scheme must be http or https`,
		`t.toml:12: schedule "a": field cron: spec never fires`,
		`t.toml:13: schedule "a": field task: task "nope" is not defined: add a [tasks.nope] table`,
		`t.toml:16: schedule "a": field name: schedule "a" is already defined on line 11`,
		`t.toml:19: schedule "a": field for_each: item 1 is empty`,
		`t.toml:20: schedule "a": field overlap: "never" is not an overlap policy: want allow or skip`,
		`t.toml:22: schedule #3: field name: missing`,
		`t.toml:23: schedule #3: field cron: minute field "61": 61 is above the maximum 59`,
	}
	_, err := Parse("t.toml", []byte(file))
	if err == nil {
		t.Fatal("Parse = nil error")
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("Parse error =\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

func TestLocate(t *testing.T) {
	t.Parallel()
	const src = `# comment
[scheduler]
db = "x" # trailing
"quoted key" = 1
text = """
fake = 1
[fake]
"""
arr = [
  "a = 1",
  { b = 2 },
]
[tasks.report]
command = ['a', "b"]
[tasks."with space".sub]
k = 1
[[schedule]]
name = "a"
[schedule.payload]
p = 1
[[schedule]]
name = "b"
dotted.key = 3
lit = '''
[[schedule]]
'''
after = 1
`
	l := locate(src)
	tests := []struct {
		path []string
		want int
	}{
		{[]string{"scheduler"}, 2},
		{[]string{"scheduler", "db"}, 3},
		{[]string{"scheduler", "quoted key"}, 4},
		{[]string{"scheduler", "text"}, 5},
		{[]string{"scheduler", "fake"}, 2},
		{[]string{"fake"}, 0},
		{[]string{"scheduler", "arr"}, 9},
		{[]string{"scheduler", "b"}, 2},
		{[]string{"tasks", "report"}, 13},
		{[]string{"tasks", "report", "command"}, 14},
		{[]string{"tasks", "report", "timeout"}, 13},
		{[]string{"tasks", "with space", "sub", "k"}, 16},
		{[]string{"schedule", "#0", "name"}, 18},
		{[]string{"schedule", "#0", "payload"}, 19},
		{[]string{"schedule", "#0", "payload", "p"}, 20},
		{[]string{"schedule", "#1"}, 21},
		{[]string{"schedule", "#1", "name"}, 22},
		{[]string{"schedule", "#1", "dotted", "key"}, 23},
		{[]string{"schedule", "#1", "after"}, 27},
		{[]string{"schedule", "#2"}, 0},
	}
	for _, tt := range tests {
		if got := l.line(tt.path...); got != tt.want {
			t.Errorf("line(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}

func TestItemID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		item map[string]any
		want string
	}{
		{"one string", map[string]any{"customer": "acme"}, "customer=acme"},
		{"sorted keys", map[string]any{"b": "2", "a": "1"}, "a=1,b=2"},
		{"numbers and bools json", map[string]any{"n": int64(3), "f": 1.5, "ok": true}, "f=1.5,n=3,ok=true"},
		{"arrays and tables json", map[string]any{"tags": []any{"x", int64(1)}, "t": map[string]any{"k": "v"}}, `t={"k":"v"},tags=["x",1]`},
		{"strings raw", map[string]any{"s": `a "quoted", x=y`}, `s=a "quoted", x=y`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := itemID(tt.item)
			if err != nil {
				t.Fatalf("itemID(%v): %v", tt.item, err)
			}
			if got != tt.want {
				t.Errorf("itemID(%v) = %q, want %q", tt.item, got, tt.want)
			}
		})
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	base := mustParse(t, `
[tasks.t]
[tasks.u]
[[schedule]]
name = "a"
cron = "@daily"
task = "t"
[[schedule]]
name = "b"
cron = "@daily"
task = "t"
payload = { x = 1 }
`)
	tests := []struct {
		name string
		old  *Config
		new  string
		want Diff
	}{
		{"same", base, "[tasks.t]\n[tasks.u]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { x = 1 }\n", Diff{}},
		{"all new", nil, "[tasks.t]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n", Diff{Added: []string{"a"}}},
		{"cron, payload and removal", base, "[tasks.t]\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { x = 2 }\n[[schedule]]\nname = \"c\"\ncron = \"@daily\"\ntask = \"t\"\n",
			Diff{Added: []string{"c"}, Changed: []string{"b"}, Removed: []string{"a"}}},
		{"zone and task", base, "[tasks.t]\n[tasks.u]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntimezone = \"Europe/London\"\ntask = \"t\"\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"u\"\npayload = { x = 1 }\n",
			Diff{Changed: []string{"a", "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Compare(tt.old, mustParse(t, tt.new))
			if !equal(got.Added, tt.want.Added) || !equal(got.Changed, tt.want.Changed) || !equal(got.Removed, tt.want.Removed) {
				t.Errorf("Compare = %+v, want %+v", got, tt.want)
			}
			if got.Empty() != tt.want.Empty() {
				t.Errorf("Empty() = %v, want %v", got.Empty(), tt.want.Empty())
			}
		})
	}
	const dated = "[tasks.t]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\npayload = { at = 1979-05-27T07:32:00-07:00 }\n"
	if d := Compare(mustParse(t, dated), mustParse(t, dated)); !d.Empty() {
		t.Errorf("Compare of two loads of one file = %+v, want empty", d)
	}
	if d := Compare(base, nil); !equal(d.Removed, []string{"a", "b"}) {
		t.Errorf("Compare(base, nil) = %+v, want both removed", d)
	}
}

// TestLoadStopsAfterTooManyProblems: a file with thousands of bad values is
// rejected after MaxErrors problems, with a last line saying so.
func TestLoadStopsAfterTooManyProblems(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[tasks.t]\ncommand = [\"true\"]\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "[[schedule]]\nname = \"s%d\"\ncron = \"61 * * * *\"\ntask = \"t\"\n", i)
	}
	_, err := Parse("t.toml", []byte(b.String()))
	es, ok := errors.AsType[Errors](err)
	if !ok {
		t.Fatalf("Parse = %v, want Errors", err)
	}
	if len(es) != MaxErrors+1 || !strings.Contains(es[len(es)-1].Error(), "too many problems") {
		t.Errorf("%d problems, last %q; want %d and a final note", len(es), es[len(es)-1], MaxErrors+1)
	}
}

// TestLoadCaseTwinsAreRejectedAlikeEveryTime: a table holding one key in
// two cases is rejected with the same problems at every load. The decoder
// matches fields without regard to case and takes either value depending on
// its map order, so a twin's value must not be validated at all.
func TestLoadCaseTwinsAreRejectedAlikeEveryTime(t *testing.T) {
	t.Parallel()
	file := `Scheduler = { workers = 3 }

[scheduler]
workers = 2

[tasks.noop]
command = ["true"]
Timeout = "x"
timeout = "1s"

[[schedule]]
name = "a"
Name = "b"
cron = "bad cron"
Cron = "0 4 * * *"
task = "noop"
`
	want := strings.Join([]string{
		`t.toml:1: unknown key "Scheduler" (keys are case-sensitive: "scheduler")`,
		`t.toml:8: task "noop": unknown key "Timeout" (keys are case-sensitive: "timeout")`,
		`t.toml:13: schedule #1: unknown key "Name" (keys are case-sensitive: "name")`,
		`t.toml:15: schedule #1: unknown key "Cron" (keys are case-sensitive: "cron")`,
	}, "\n")
	for i := range 50 {
		_, err := Parse("t.toml", []byte(file))
		var errs Errors
		if !errors.As(err, &errs) {
			t.Fatalf("load %d: %v, want Errors", i, err)
		}
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != want {
			t.Fatalf("load %d:\n%s\nwant\n%s", i, strings.Join(got, "\n"), want)
		}
	}
}

func TestLoadWarnings(t *testing.T) {
	t.Parallel()
	cfg, err := Parse("t.toml", []byte(`[tasks.t]
[[schedule]]
name = "fine"
cron = "0 3 * * *"
task = "t"
[[schedule]]
name = "hourly-by-mistake"
task = "t"
cron = "0 3 * * * *"
`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(cfg.Warnings) != 1 {
		t.Fatalf("Warnings = %v, want one", cfg.Warnings)
	}
	got := cfg.Warnings[0].Error()
	if want := `t.toml:9: schedule "hourly-by-mistake": field cron: "0 3 * * * *" has six fields`; !strings.HasPrefix(got, want) {
		t.Errorf("warning = %q, want it to start with %q", got, want)
	}
}

func TestLoadBudgets(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
[tasks.export]
command = ["/usr/bin/export"]
memory_max = "512MiB"
cpu_time_max = "10m"
open_files_max = 64
retry_over_limit = true
give_up_after = "6h"
[tasks.hook]
url = "https://example.com/hook"
give_up_after = "90m"
[tasks.sizes]
command = ["true"]
memory_max = "3G"
`)
	export := cfg.Tasks["export"]
	if export.MemoryMax != 512<<20 || export.CPUTimeMax != 10*time.Minute || export.OpenFilesMax != 64 ||
		!export.RetryOverLimit || export.GiveUpAfter != 6*time.Hour {
		t.Errorf("export = %+v", export)
	}
	if got := export.TypeConfig().GiveUpAfter; got != 6*time.Hour {
		t.Errorf("export.TypeConfig().GiveUpAfter = %v, want 6h", got)
	}
	if got := cfg.Tasks["hook"].GiveUpAfter; got != 90*time.Minute {
		t.Errorf("hook.GiveUpAfter = %v, want 1h30m", got)
	}
	if got := cfg.Tasks["sizes"]; got.MemoryMax != 3<<30 || got.CPUTimeMax != 0 || got.OpenFilesMax != 0 || got.GiveUpAfter != 0 {
		t.Errorf("sizes = %+v", got)
	}
}

func TestLoadRate(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
[tasks.api]
url = "https://example.com/api"
rate = "10/1m"
[tasks.per_customer]
command = ["/usr/bin/sync", "{{.customer}}"]
rate = "2/s"
rate_burst = 4
rate_key = "{{.customer}}"
`)
	api := cfg.Tasks["api"].TypeConfig().Rate
	if api.Starts != 10 || api.Per != time.Minute || api.Burst != 0 || api.Key != nil {
		t.Errorf("api rate = %+v, want 10 per 1m, no burst, no key", api)
	}
	pc := cfg.Tasks["per_customer"].TypeConfig().Rate
	if pc.Starts != 2 || pc.Per != time.Second || pc.Burst != 4 || pc.Key == nil {
		t.Fatalf("per_customer rate = %+v, want 2 per 1s, burst 4, a key", pc)
	}
	for payload, want := range map[string]string{`{"customer":"acme","n":1}`: "acme", `{"n":1}`: "", `[1]`: ""} {
		if got := pc.Key(json.RawMessage(payload)); got != want {
			t.Errorf("key of %s = %q, want %q", payload, got, want)
		}
	}
	if none := cfg.Tasks["api"]; none.RateKey != "" || none.RateBurst != 0 {
		t.Errorf("api = %+v", none)
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{
		"1048576": 1 << 20, "1024K": 1 << 20, "1024KiB": 1 << 20, "512M": 512 << 20, "512MiB": 512 << 20,
		"2G": 2 << 30, "2GiB": 2 << 30, "1T": 1 << 40, "1TiB": 1 << 40, "4096B": 4096,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "M", "-1M", "1.5G", "1 G", "1g", "1MB", "1GB", "0x10", "9223372036854775808"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestTaskLine: each task knows the line of its [tasks.NAME] table, for
// the errors found once the file has loaded (a task no handler runs).
func TestTaskLine(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `[scheduler]
timezone = "UTC"

[tasks.go-handler]
max_attempts = 2

[tasks.cmd]
command = ["true"]

[tasks]
inline = { url = "https://example.com/hook" }
`)
	for name, want := range map[string]int{"go-handler": 4, "cmd": 7, "inline": 11} {
		if got := cfg.Tasks[name].Line(); got != want {
			t.Errorf("task %s: Line() = %d, want %d", name, got, want)
		}
	}
}
