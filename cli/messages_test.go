package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"scheduler/schedule"
)

// runInProcess runs the command in-process on a config written to a fresh
// directory and returns its stdout, stderr and exit code.
func runInProcess(t *testing.T, config string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schedules.toml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	err := Run(context.Background(), append([]string{"-config", path}, args...), &out, &errb, nil, Options{})
	return out.String(), errb.String(), ExitCode(err)
}

// TestCheckSummary: -check counts in words that agree with the numbers,
// and a rejected file ends with the count of its problems, not with a claim
// that something was or was not applied.
func TestCheckSummary(t *testing.T) {
	t.Parallel()
	one := "[tasks.t]\ncommand = [\"true\"]\n[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n"
	out, errs, code := runInProcess(t, one, "-check")
	if code != 0 {
		t.Fatalf("-check: exit %d\n%s", code, errs)
	}
	if !strings.Contains(out, ": ok, 1 schedule, 1 task, database ") {
		t.Errorf("-check of one schedule and one task says:\n%s", out)
	}
	two := one + "[tasks.u]\ncommand = [\"true\"]\n[[schedule]]\nname = \"b\"\ncron = \"@daily\"\ntask = \"u\"\n"
	if out, _, _ := runInProcess(t, two, "-check"); !strings.Contains(out, ": ok, 2 schedules, 2 tasks, database ") {
		t.Errorf("-check of two schedules and two tasks says:\n%s", out)
	}

	bad := strings.Replace(one, "@daily", "61 * * * *", 1)
	tests := []struct {
		name   string
		config string
		args   []string
		last   string
	}{
		{"check, one problem", bad, []string{"-check"}, "1 problem in "},
		{"check, two problems", bad + "bogus = 1\n", []string{"-check"}, "2 problems in "},
		{"next", bad, []string{"-next", "a"}, "1 problem in "},
	}
	for _, tt := range tests {
		_, errs, code := runInProcess(t, tt.config, tt.args...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2", tt.name, code)
		}
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		last := lines[len(lines)-1]
		if !strings.HasPrefix(last, tt.last) || !strings.Contains(last, "schedules.toml") {
			t.Errorf("%s: last line %q, want %q and the file", tt.name, last, tt.last)
		}
		if tt.args[0] == "-check" && (strings.Contains(last, "applied") || strings.Contains(last, "nothing")) {
			t.Errorf("%s: -check applies nothing ever, yet says %q", tt.name, last)
		}
		if tt.args[0] != "-check" && !strings.HasSuffix(last, "; nothing was done") {
			t.Errorf("%s: last line %q does not say that nothing was done", tt.name, last)
		}
	}
}

// TestProblemCount: the note that ends a list cut short is not counted as
// a problem.
func TestProblemCount(t *testing.T) {
	t.Parallel()
	var es schedule.ConfigErrors
	for range schedule.MaxConfigErrors {
		es = append(es, &schedule.ConfigError{File: "s.toml", Err: errors.New("bad")})
	}
	if got, want := problemCount(es[:1]), "1 problem in s.toml"; got != want {
		t.Errorf("problemCount(1) = %q, want %q", got, want)
	}
	es = append(es, &schedule.ConfigError{File: "s.toml", Err: fmt.Errorf("%w: stopped", schedule.ErrTooManyProblems)})
	if got, want := problemCount(es), "more than 100 problems in s.toml"; got != want {
		t.Errorf("problemCount(cut short) = %q, want %q", got, want)
	}
}
