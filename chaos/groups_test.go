package chaos

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stubbornScript ignores SIGTERM (which its children inherit), starts
// grandchildren and a great-grandchild that ignore it too, writes
// "TAG PGID" to groups.log and sleeps. It is the worst command a job can
// run short of leaving its process group.
const stubbornScript = `trap '' TERM
(trap '' TERM; sleep 300) &
sh -c 'sleep 300 & sleep 300' &
(sh -c 'sleep 300') &
echo "$1 $$" >> "$2"
sleep 300
`

// groups reads groups.log: process group by tag.
func readGroups(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			pgid, _ := strconv.Atoi(f[1])
			out[f[0]] = pgid
		}
	}
	return out
}

func groupsConfig() string {
	return fmt.Sprintf(`
[scheduler]
workers = 4
shutdown_grace = "1s"

[tasks.stuck]
command = ["sh", "-c", %[1]q, "sh", "{{.tag}}", "{{DIR}}/groups.log"]
timeout = "1s"
max_attempts = 1
kill_grace = "1s"

[tasks.hang]
command = ["sh", "-c", %[1]q, "sh", "{{.tag}}", "{{DIR}}/groups.log"]
max_attempts = 3
kill_grace = "1s"

[[schedule]]
name = "stuck"
cron = "0 0 1 1 *"
task = "stuck"
for_each = [ { tag = "timeout-a" }, { tag = "timeout-b" } ]

[[schedule]]
name = "hang"
cron = "0 0 1 1 *"
task = "hang"
for_each = [ { tag = "shutdown-a" }, { tag = "shutdown-b" } ]
`, stubbornScript)
}

// TestTimeoutAndShutdownKillProcessGroups checks that no process of a
// command's process group survives (1) the task's timeout, and (2) SIGTERM
// to the daemon, when the command and its grandchildren ignore SIGTERM;
// after the graceful shutdown the interrupted jobs are pending again with
// their attempt given back.
func TestTimeoutAndShutdownKillProcessGroups(t *testing.T) {
	t.Parallel()
	s := newSite(t, groupsConfig())
	groupsLog := s.path("groups.log")
	killGroupsAtCleanup(t, groupsLog)
	gone := func(tags ...string) func() bool {
		return func() bool {
			g := readGroups(t, groupsLog)
			for _, tag := range tags {
				if len(groupMembers(g[tag])) > 0 {
					return false
				}
			}
			return true
		}
	}

	d := s.start()
	s.trigger("stuck")
	eventually(t, "both timeout groups started", func() bool { return len(readGroups(t, groupsLog)) == 2 })
	started := time.Now()
	d.waitMsg("job dead", 2)
	took := time.Since(started)
	// The group got SIGKILL before the attempt was recorded; a killed
	// process may take a moment to leave /proc.
	eventuallyWithin(t, deadline, "no process of the timed-out groups", gone("timeout-a", "timeout-b"))
	t.Logf("timeout 1s: jobs dead %v after they started, no process of their groups left", took)

	ids := []string{}
	out := s.mustCLI("-trigger", "hang")
	for _, m := range enqueuedLine.FindAllStringSubmatch(out, -1) {
		ids = append(ids, m[1])
	}
	eventually(t, "both shutdown groups started", func() bool { return len(readGroups(t, groupsLog)) == 4 })
	stopAt := time.Now()
	if err := d.stop(); err != nil {
		t.Errorf("daemon exit after SIGTERM: %v", err)
	}
	t.Logf("SIGTERM with two stubborn jobs: daemon exited after %v (grace 1s)", time.Since(stopAt))
	// The daemon waited for the leaders; their killed descendants may take
	// a moment to be gone from /proc.
	eventuallyWithin(t, deadline, "no process of the shutdown groups", gone("shutdown-a", "shutdown-b"))
	for _, id := range ids {
		if v := s.job(id); v.State != "pending" || v.Attempt != 0 {
			t.Errorf("job %s after shutdown: %s at attempt %d, want pending with the attempt given back", id, v.State, v.Attempt)
		}
	}

}

// TestForcedExitLeavesNoProcessGroup checks that a second SIGTERM, which
// makes the daemon exit without waiting for its running jobs, does not leave
// their process groups behind: commands that ignore SIGTERM would otherwise
// run on as orphans, and run again when their jobs are reclaimed.
func TestForcedExitLeavesNoProcessGroup(t *testing.T) {
	t.Parallel()
	s := newSite(t, groupsConfig())
	groupsLog := s.path("groups.log")
	killGroupsAtCleanup(t, groupsLog)
	d := s.start()
	s.trigger("hang")
	eventually(t, "both jobs running", func() bool { return len(readGroups(t, groupsLog)) == 2 })
	d.signal(syscall.SIGTERM)
	d.waitMsg("scheduler stopping", 1)
	d.signal(syscall.SIGTERM)
	d.wait()
	if code := d.exitCode(); code == 0 {
		t.Errorf("forced exit: exit code 0, want non-zero")
	}
	var left []string
	for tag, pgid := range readGroups(t, groupsLog) {
		if ps := groupMembers(pgid); len(ps) > 0 {
			left = append(left, fmt.Sprintf("%s: group %d %v", tag, pgid, ps))
		}
	}
	if len(left) > 0 {
		t.Errorf("after a forced exit (second SIGTERM), processes of abandoned jobs survive the daemon: %v", left)
	}
}

// killGroupsAtCleanup makes sure no process a test started outlives it,
// whatever the test found.
func killGroupsAtCleanup(t *testing.T, groupsLog string) {
	t.Cleanup(func() {
		for _, pgid := range readGroups(t, groupsLog) {
			if pgid > 1 {
				syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}
	})
}
