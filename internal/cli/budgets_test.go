package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// TestCommandOverItsCPULimitIsDead runs the built binary: a command task
// with cpu_time_max, launched through the binary itself, spins past its
// limit and its job is dead at once with the limit as its reason; -check
// lists the task's budgets.
func TestCommandOverItsCPULimitIsDead(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.spin]
command = ["sh", "-c", "ulimit -n; while :; do :; done"]
cpu_time_max = "1s"
open_files_max = 64
give_up_after = "6h"
max_attempts = 5
[tasks.hook]
url = "https://example.com/hook"
give_up_after = "90m"
[tasks.plain]
command = ["true"]
[tasks.api]
url = "https://example.com/api"
rate = "2/s"
rate_burst = 4
rate_key = "{{.customer}}"
[[schedule]]
name = "s"
cron = "0 0 1 1 *"
task = "spin"
`)
	check := mustCLI(t, dir, "-check")
	for _, want := range []string{
		"TASK  LIMITS",
		"spin  cpu_time_max 1s, open_files_max 64 (permanent when exceeded)  6h",
		"hook  -",
	} {
		if !strings.Contains(check, want) {
			t.Errorf("-check output lacks %q:\n%s", want, check)
		}
	}
	if !regexp.MustCompile(`(?m)^api +- +- +2/1s per \{\{\.customer\}\}, burst 4$`).MatchString(check) {
		t.Errorf("-check output lacks the rate limit of api:\n%s", check)
	}
	if strings.Contains(check, "plain") {
		t.Errorf("-check lists a task without budgets:\n%s", check)
	}

	startDaemon(t, dir, nil)
	out := mustCLI(t, dir, "-trigger", "s")
	id := regexp.MustCompile(`enqueued job (\d+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("trigger: %q", out)
	}
	var job jobView
	eventually(t, "job dead", func() bool {
		out, _, _ := cli(t, dir, "-job", id[1], "-json")
		json.Unmarshal([]byte(out), &job)
		return job.State == "dead"
	})
	if len(job.Attempts) != 1 {
		t.Fatalf("dead after %d attempts, want 1: exceeding the limit is permanent", len(job.Attempts))
	}
	a := job.Attempts[0]
	if !strings.Contains(a.Error, "cpu time limit 1s exceeded (killed by signal SIGXCPU") || strings.TrimSpace(a.Output) != "64" {
		t.Errorf("attempt: %s, error %q, output %q; want the cpu limit as its reason and open files limited to 64", a.Outcome, a.Error, a.Output)
	}
}
