package chaos

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/tasks"
)

// FuzzLoadConfig feeds the config loader arbitrary files, seeded with the
// hostile corpus and the suite's own configs. Invariants: it never panics;
// it returns a Config or a non-empty config.Errors whose every entry names
// the file and says something; it decides the same way twice; and a Config
// it accepts is usable: every command template builds, every schedule has
// its task and a next instant query that returns.
//
//	go test -run '^$' -fuzz FuzzLoadConfig ./chaos
func FuzzLoadConfig(f *testing.F) {
	for _, hc := range hostileConfigs(20) {
		f.Add(hc.data)
	}
	for _, c := range []string{goodBase, stormConfig, catchUpConfig, groupsConfig(), hygieneConfig} {
		f.Add([]byte(c))
	}
	// Keys in two cases: the decoder picks either value.
	f.Add([]byte("[tasks.t]\ncommand = [\"true\"]\n[[schedule]]\nname = \"a\"\ncron = \"bad\"\nCron = \"@daily\"\ntask = \"t\"\n" +
		"[[sChedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"t\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse("fuzz.toml", data)
		_, err2 := config.Parse("fuzz.toml", data)
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) {
			t.Fatalf("Parse is not deterministic:\n%v\n---\n%v", err, err2)
		}
		if err != nil {
			if cfg != nil {
				t.Fatalf("Parse returned a Config and an error")
			}
			var errs config.Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error %v (%T) is not a non-empty config.Errors", err, err)
			}
			for _, e := range errs {
				msg := e.Error()
				if e.File != "fuzz.toml" || !strings.HasPrefix(msg, "fuzz.toml") || e.Err == nil || len(msg) <= len("fuzz.toml: ") {
					t.Fatalf("problem without a file or a message: %q", msg)
				}
			}
			return
		}
		for name, task := range cfg.Tasks {
			if len(task.Command) > 0 {
				if _, err := tasks.NewCommand(tasks.CommandConfig{Argv: task.Command}); err != nil {
					t.Fatalf("task %s: accepted command %q does not build: %v", name, task.Command, err)
				}
			}
		}
		for _, s := range cfg.Schedules {
			if cfg.Tasks[s.Task] == nil || len(s.Items()) == 0 {
				t.Fatalf("schedule %s: task %q or items missing", s.Name, s.Task)
			}
			if _, err := schedule.NextN(cfg, s.Name, time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC), 3); err != nil {
				t.Fatalf("schedule %s: NextN: %v", s.Name, err)
			}
		}
	})
}

// FuzzCommandArguments fuzzes the payload templating of command tasks.
// Invariants: building a command from any template and expanding it over
// any payload never panics; a payload value reaches the program as exactly
// one argument, byte for byte (what JSON can carry of it), with no shell or
// template interpretation of its content; a key missing from the payload is
// an error, never an empty argument.
//
//	go test -run '^$' -fuzz FuzzCommandArguments ./chaos
func FuzzCommandArguments(f *testing.F) {
	seeds := []struct{ tmpl, value, payload string }{
		{"{{.customer}}", "acme", `{"customer":"acme"}`},
		{"--to={{.email}}", "; rm -rf / #", `{"email":"a@b"}`},
		{"{{.x", "$(touch pwned)", `{}`},
		{"{{range .list}}{{.}},{{end}}", "`id`", `{"list":[1,2,3]}`},
		{"{{.n}}", "{{.other}}", `{"n":12345678901234567890}`},
		{"{{index .m \"k\"}}", "a\nb\x00c", `{"m":{"k":null}}`},
		{"{{printf \"%s\" .s}}", "\"quoted\" 'single'", `{"s":"v"}`},
		{"{{.a.b.c}}", "\xff\xfe", `{"a":{"b":{}}}`},
		{"{{template \"x\"}}", "", `[1,2]`},
		{"{{.}}", "[scheduler]\nworkers = 1", `null`},
	}
	for _, s := range seeds {
		f.Add(s.tmpl, s.value, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, tmpl, value string, payload []byte) {
		if c, err := tasks.NewCommand(tasks.CommandConfig{Argv: []string{"prog", tmpl}}); err == nil {
			if args, err := c.Args(payload); err == nil && (len(args) != 2 || args[0] != "prog") {
				t.Fatalf("Args(%q) over %q = %q, want [prog, expansion]", tmpl, payload, args)
			}
		}

		c, err := tasks.NewCommand(tasks.CommandConfig{Argv: []string{"prog", "{{.v}}", "pre {{.v}} post", "{{.missing}}"}})
		if err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(map[string]string{"v": value})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Args(body); err == nil || !strings.Contains(err.Error(), "missing") {
			t.Fatalf("a template over a missing key expanded without error (%v)", err)
		}
		lit, err := tasks.NewCommand(tasks.CommandConfig{Argv: []string{"prog", "{{.v}}", "pre {{.v}} post"}})
		if err != nil {
			t.Fatal(err)
		}
		args, err := lit.Args(body)
		if err != nil {
			t.Fatalf("Args over %s: %v", body, err)
		}
		// JSON carries valid UTF-8 only: compare with what it carried.
		var carried map[string]string
		if err := json.Unmarshal(body, &carried); err != nil {
			t.Fatal(err)
		}
		want := carried["v"]
		if len(args) != 3 || args[1] != want || args[2] != fmt.Sprintf("pre %s post", want) {
			t.Fatalf("value %q reached the program as %q, want it literally as one argument", value, args)
		}
	})
}
