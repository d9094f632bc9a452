package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTriggerUsedKeySaysSoOnce: a -trigger with a -key used before says so
// in one line, whatever the fan-out, then names each job that holds the
// key; a fan-out that gained an item since enqueues that item alone.
func TestTriggerUsedKeySaysSoOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "s.db")
	createDB(t, db)
	config := func(items string) string {
		return "[tasks.t]\ncommand = [\"true\"]\n[[schedule]]\nname = \"fan\"\ncron = \"@yearly\"\ntask = \"t\"\nfor_each = [ " + items + " ]\n"
	}
	run := func(cfg string, args ...string) string {
		t.Helper()
		out, errs, code := runInProcess(t, cfg, append([]string{"-db", db}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		return out
	}
	three := config(`{ c = "a" }, { c = "b" }, { c = "c" }`)
	out := run(three, "-trigger", "fan", "-key", "k1")
	if n := strings.Count(out, "enqueued job"); n != 3 {
		t.Fatalf("first -trigger -key k1 enqueued %d jobs, want 3:\n%s", n, out)
	}
	usedLine := regexp.MustCompile(`(?m)^  job \d+ \(key fan\|c=[abcd]\|manual\|k1\)$`)

	out = run(three, "-trigger", "fan", "-key", "k1")
	if n := strings.Count(out, "k1"); n != 4 || !strings.HasPrefix(out, "trigger key \"k1\" was used before: nothing enqueued\n") ||
		len(usedLine.FindAllString(out, -1)) != 3 || strings.Contains(out, "enqueued job") {
		t.Errorf("-trigger with a used key says:\n%s\nwant one line that the key was used, then each of its 3 jobs", out)
	}

	four := config(`{ c = "a" }, { c = "b" }, { c = "c" }, { c = "d" }`)
	out = run(four, "-trigger", "fan", "-key", "k1")
	if strings.Count(out, "enqueued job") != 1 || !strings.Contains(out, "enqueued job 4 (key fan|c=d|manual|k1)\n") ||
		strings.Count(out, "was used before") != 1 || !strings.Contains(out, "trigger key \"k1\" was used before: 3 of 4 items not enqueued again\n") ||
		len(usedLine.FindAllString(out, -1)) != 3 {
		t.Errorf("-trigger with a key used before a new item says:\n%s\nwant the new item enqueued, and one line for the 3 used", out)
	}
}

// TestPauseAndResumeAnswerAlike: -pause and -resume each say what they
// did on stdout, and each given twice says in the same shape that there
// was nothing to do, exit 0, with nothing on stderr.
func TestPauseAndResumeAnswerAlike(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "s.db")
	createDB(t, db)
	config := "[tasks.t]\ncommand = [\"true\"]\n[[schedule]]\nname = \"s\"\ncron = \"@yearly\"\ntask = \"t\"\n"
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"-pause", "s"}, "paused s\n"},
		{[]string{"-pause", "s"}, "s was already paused: nothing to do\n"},
		{[]string{"-resume", "s"}, "resumed s: missed instants follow catch_up: 0 enqueued, 0 skipped (see -skipped s)\n"},
		{[]string{"-resume", "s"}, "s was not paused: nothing to do\n"},
	} {
		out, errs, code := runInProcess(t, config, append([]string{"-db", db}, step.args...)...)
		if code != 0 || out != step.want || errs != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 0, stdout %q, nothing on stderr", step.args, code, out, errs, step.want)
		}
	}
}
