package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// fanScript fails for the customer globex and prints the customer otherwise.
const fanScript = `#!/bin/sh
[ "$1" = globex ] && { echo "globex is down"; exit 1; }
echo "ran $1"
`

// TestStatusShowsFanOutAndDaemons: -status sums the last instant over its
// fan-out items (one dead item makes the instant dead), lists the daemon
// alive with its pid, and once the daemon is gone warns that none is alive,
// with its last heartbeat; -trigger then warns that its run waits. A daemon
// that stops cleanly removes its row.
func TestStatusShowsFanOutAndDaemons(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.fan]
command = ["./fan.sh", "{{.customer}}"]
max_attempts = 1
[[schedule]]
name = "yearly"
cron = "0 0 1 1 *"
task = "fan"
for_each = [ { customer = "acme" }, { customer = "globex" }, { customer = "initech" } ]
`)
	writeFile(t, filepath.Join(dir, "fan.sh"), fanScript)
	d := startDaemon(t, dir, nil)
	_, errs, _ := cli(t, dir, "-trigger", "yearly")
	if strings.Contains(errs, "warning") {
		t.Errorf("-trigger with a daemon alive warns:\n%s", errs)
	}
	mustCLI(t, dir, "-backfill", "yearly", "-from", "2026-01-01T00:00:00Z", "-to", "2026-01-01T00:00:00Z")
	d.waitLogCount("job dead", 2)
	d.waitLogCount("job done", 4) // two of the instant, two of the manual run

	var rep statusReport
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	s := rep.Schedules[0]
	if s.LastItems != 3 || s.LastStates["done"] != 2 || s.LastStates["dead"] != 1 || deref(s.LastState) != "dead" {
		t.Errorf("status of the last instant: %d items %v, state %q; want 3 items, 2 done, 1 dead, state dead", s.LastItems, s.LastStates, deref(s.LastState))
	}
	if s.LastManualItems != 3 || s.LastManualStates["done"] != 2 || s.LastManualStates["dead"] != 1 || deref(s.LastManualState) != "dead" {
		t.Errorf("status of the last manual run: %d items %v, state %q; want 3 items, 2 done, 1 dead, state dead", s.LastManualItems, s.LastManualStates, deref(s.LastManualState))
	}
	if !rep.DaemonAlive || len(rep.Daemons) != 1 || rep.Daemons[0].PID != d.cmd.Process.Pid || !rep.Daemons[0].Alive {
		t.Errorf("status daemons: alive %v %+v; want the daemon pid %d alive", rep.DaemonAlive, rep.Daemons, d.cmd.Process.Pid)
	}
	table := mustCLI(t, dir, "-status")
	if n := strings.Count(table, "3 items: 2 done, 1 dead"); n != 2 {
		t.Errorf("-status shows %d fan-out outcomes, want the instant's and the manual run's:\n%s", n, table)
	}
	for _, want := range []string{"1 alive: pid " + strconv.Itoa(d.cmd.Process.Pid)} {
		if !strings.Contains(table, want) {
			t.Errorf("-status does not say %q:\n%s", want, table)
		}
	}

	// A crashed daemon leaves its row; two minutes later (the commands'
	// clock moved, past store.AliveWithin) it is not alive.
	d.signal(syscall.SIGKILL)
	d.wait()
	offset := filepath.Join(dir, "offset")
	writeFile(t, offset, "2m")
	later := []string{"SCHEDULER_TEST_CLOCK_OFFSET_FILE=" + offset}
	out, errs, code := runBinary(t, binary, dir, later, "-status")
	if code != 0 || !strings.Contains(out, "WARNING: none alive; last seen ") {
		t.Errorf("-status with the daemon dead: exit %d, no warning:\n%s%s", code, out, errs)
	}
	out, errs, code = runBinary(t, binary, dir, later, "-trigger", "yearly", "-item", "acme")
	if code != 0 || !strings.Contains(out, "enqueued job") || !regexp.MustCompile(`queued; no daemon has been seen since \S+ \(pid \d+`).MatchString(errs) {
		t.Errorf("-trigger with no daemon: exit %d, want a warning on stderr:\n%s%s", code, out, errs)
	}

	// A clean stop removes the daemon's row.
	d2 := startDaemon(t, dir, nil)
	// Recorded before it says it started: a -trigger at once is not warned.
	if _, errs, code := cli(t, dir, "-trigger", "yearly", "-item", "acme"); code != 0 || strings.Contains(errs, "warning") {
		t.Errorf("-trigger right after the daemon started: exit %d\n%s", code, errs)
	}
	d2.signal(syscall.SIGTERM)
	if err := d2.wait(); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	for _, dv := range rep.Daemons {
		if dv.PID == d2.cmd.Process.Pid {
			t.Errorf("a daemon stopped cleanly left its row: %+v", dv)
		}
	}
	if len(rep.Daemons) != 1 {
		t.Errorf("daemons after a crash and a clean stop: %+v, want the crashed one's row", rep.Daemons)
	}
}

// TestStatusWarnsOnFreshDatabase: on a database no daemon has run on
// since its first start, -status and -trigger say that no daemon runs.
func TestStatusWarnsOnFreshDatabase(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "s"
cron = "@daily"
task = "rec"
`)
	createDB(t, filepath.Join(dir, "scheduler.db"))
	_, errs, code := cli(t, dir, "-trigger", "s")
	if code != 0 || !strings.Contains(errs, "warning: queued; no daemon is running on scheduler.db (no daemon has run on this database)") {
		t.Errorf("-trigger on a fresh database: exit %d\n%s", code, errs)
	}
	if out := mustCLI(t, dir, "-status"); !strings.Contains(out, "WARNING: none alive; no daemon has run on this database; queued jobs wait") {
		t.Errorf("-status on a fresh database does not warn:\n%s", out)
	}
}

// TestStatusSaysTheLastDaemonStoppedCleanly: once the only daemon has
// stopped cleanly (its rows are gone), -status and -trigger say so, with
// the time it loaded its config, after which it stopped; past the time the
// rows of a daemon that did not stop cleanly are kept, they say that either
// may have happened.
func TestStatusSaysTheLastDaemonStoppedCleanly(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "s"
cron = "@yearly"
task = "rec"
`)
	d := startDaemon(t, dir, nil)
	d.signal(syscall.SIGTERM)
	if err := d.wait(); err != nil {
		t.Fatalf("daemon exit: %v", err)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Daemons) != 0 || rep.Config == nil {
		t.Fatalf("-status -json after a clean stop: daemons %+v, config %+v; want no row and the stored config", rep.Daemons, rep.Config)
	}
	want := "the last daemon stopped cleanly, some time after " + rep.Config.LoadedAt + " when it loaded its config"
	if out := mustCLI(t, dir, "-status"); !strings.Contains(out, "WARNING: none alive; "+want+"; queued jobs wait") {
		t.Errorf("-status after a clean stop does not say %q:\n%s", want, out)
	}
	if _, errs, code := cli(t, dir, "-trigger", "s"); code != 0 || !strings.Contains(errs, "no daemon is running on scheduler.db ("+want+")") {
		t.Errorf("-trigger after a clean stop: exit %d, stderr does not say %q:\n%s", code, want, errs)
	}

	offset := filepath.Join(dir, "offset")
	writeFile(t, offset, (presenceKept + time.Hour).String())
	later := []string{"SCHEDULER_TEST_CLOCK_OFFSET_FILE=" + offset}
	out, errs, code := runBinary(t, binary, dir, later, "-status")
	if want := "WARNING: none alive; none seen in the last 7 days; the last daemon loaded its config at " + rep.Config.LoadedAt +
		", and stopped cleanly or was lost since; "; code != 0 || !strings.Contains(out, want) {
		t.Errorf("-status a week after the stop: exit %d, does not say %q:\n%s%s", code, want, out, errs)
	}
}

// TestPresenceKeptIsTheQueues: what -status infers from rows that are gone
// holds only while it knows how long the queue keeps them.
func TestPresenceKeptIsTheQueues(t *testing.T) {
	t.Parallel()
	if presenceKept != store.PresenceKept {
		t.Errorf("presenceKept = %s, want store.PresenceKept, %s", presenceKept, store.PresenceKept)
	}
}

// TestJobsListFilters: -jobs lists newest first, bounded by -limit, and
// narrows by -state, -task, -schedule and -key prefix; bad filters are
// usage errors.
func TestJobsListFilters(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.fan]
command = ["./fan.sh", "{{.customer}}"]
max_attempts = 1
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "yearly"
cron = "0 0 1 1 *"
task = "fan"
for_each = [ { customer = "acme" }, { customer = "globex" } ]
[[schedule]]
name = "other"
cron = "0 0 1 1 *"
task = "rec"
`)
	writeFile(t, filepath.Join(dir, "fan.sh"), fanScript)
	createDB(t, filepath.Join(dir, "scheduler.db"))
	mustCLI(t, dir, "-backfill", "yearly", "-from", "2025-01-01T00:00:00Z", "-to", "2026-01-01T00:00:00Z")
	mustCLI(t, dir, "-trigger", "other", "-key", "k1")
	list := func(args ...string) []jobView {
		t.Helper()
		var js []jobView
		if err := json.Unmarshal([]byte(mustCLI(t, dir, append([]string{"-jobs", "-json"}, args...)...)), &js); err != nil {
			t.Fatal(err)
		}
		return js
	}
	keys := func(js []jobView) string {
		var ks []string
		for _, j := range js {
			ks = append(ks, j.Key)
		}
		return strings.Join(ks, " ")
	}
	all := list()
	if len(all) != 5 || all[0].Key != "other||manual|k1" {
		t.Fatalf("-jobs: %s; want 5, the trigger first", keys(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID {
			t.Errorf("-jobs not newest first: %s", keys(all))
		}
	}
	if got := list("-limit", "2"); len(got) != 2 || got[0].ID != all[0].ID {
		t.Errorf("-limit 2: %s", keys(got))
	}
	if got := keys(list("-task", "rec")); got != "other||manual|k1" {
		t.Errorf("-task rec: %s", got)
	}
	if got := keys(list("-schedule", "yearly", "-key", "yearly|customer=globex|")); got != "yearly|customer=globex|2026-01-01T00:00:00Z yearly|customer=globex|2025-01-01T00:00:00Z" {
		t.Errorf("-schedule yearly -key globex: %s", got)
	}
	if got := list("-state", "pending"); len(got) != 5 {
		t.Errorf("-state pending: %s", keys(got))
	}
	if got := list("-state", "dead"); len(got) != 0 {
		t.Errorf("-state dead: %s", keys(got))
	}
	d := startDaemon(t, dir, nil)
	d.waitLogCount("job dead", 2)
	d.waitLogCount("job done", 3)
	if got := keys(list("-state", "dead")); got != "yearly|customer=globex|2026-01-01T00:00:00Z yearly|customer=globex|2025-01-01T00:00:00Z" {
		t.Errorf("-state dead: %s", got)
	}
	table := mustCLI(t, dir, "-jobs", "-state", "done", "-limit", "3")
	if !strings.Contains(table, "ID") || strings.Count(table, " done ") != 3 || !strings.Contains(table, "3 newest shown") {
		t.Errorf("-jobs -state done -limit 3:\n%s", table)
	}
	for _, args := range [][]string{{"-jobs", "-state", "bogus"}, {"-jobs", "-limit", "0"}, {"-jobs", "-limit", "1001"}, {"-state", "dead"}, {"-dead", "-key", "x"}} {
		if _, errs, code := cli(t, dir, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, ExitUsage, errs)
		}
	}
}

// TestSkippedRunsShownAndLogged: overlap skips are logged one by one and
// listed by -skipped with the instant in the schedule's zone; -status counts
// them; -job with a skipped instant's key says it was skipped and why. The
// daemon logs a pause and a resume made by the CLI, which says what it did.
func TestSkippedRunsShownAndLogged(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.slow]
command = ["sleep", "30"]
kill_grace = "1s"
[[schedule]]
name = "busy"
cron = "@every 1s"
timezone = "Asia/Tokyo"
task = "slow"
overlap = "skip"
`)
	d := startDaemon(t, dir, nil)
	log := d.waitLogCount("run skipped", 2)
	line := regexp.MustCompile(`msg="run skipped" component=beat schedule=busy item="?"? instant=(\S+) reason=overlap`).FindStringSubmatch(log)
	if line == nil {
		t.Fatalf("no run skipped line with schedule, item, instant and reason:\n%s", log)
	}
	if !strings.HasSuffix(line[1], "+09:00") {
		t.Errorf("logged instant %s is not in the schedule's zone", line[1])
	}
	var skips []skipView
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-skipped", "busy", "-json", "-limit", "2")), &skips); err != nil {
		t.Fatal(err)
	}
	if len(skips) != 2 || skips[0].Schedule != "busy" || skips[0].Reason != "overlap" || !strings.HasSuffix(skips[0].Instant, "+09:00") || skips[0].Instant <= skips[1].Instant {
		t.Fatalf("-skipped busy -limit 2: %+v; want two overlaps, newest first, in +09:00", skips)
	}
	table := mustCLI(t, dir, "-skipped")
	if !strings.Contains(table, "REASON") || !strings.Contains(table, skips[0].Instant) {
		t.Errorf("-skipped does not list %s:\n%s", skips[0].Instant, table)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	if s := rep.Schedules[0]; s.SkipsLastDay < 2 || s.LastSkip == nil || s.LastSkip.Reason != "overlap" {
		t.Errorf("status: %d skips in the last day, last %+v", s.SkipsLastDay, s.LastSkip)
	}
	if out := mustCLI(t, dir, "-status"); !strings.Contains(out, "SKIPPED (LAST DAY)") {
		t.Errorf("-status has no skips section:\n%s", out)
	}
	at, err := time.Parse(time.RFC3339, skips[1].Instant)
	if err != nil {
		t.Fatal(err)
	}
	key := fmt.Sprintf("busy||%s", at.UTC().Format(time.RFC3339))
	out := mustCLI(t, dir, "-job", key)
	if !strings.Contains(out, "was skipped: overlap") || !strings.Contains(out, skips[1].Instant) {
		t.Errorf("-job %s:\n%s", key, out)
	}
	if _, errs, code := cli(t, dir, "-job", "busy||2020-01-01T00:00:00Z"); code == 0 {
		t.Errorf("-job of an instant neither run nor skipped: exit 0\n%s", errs)
	}

	if out := mustCLI(t, dir, "-pause", "busy"); !strings.Contains(out, "paused busy") {
		t.Errorf("-pause: %q", out)
	}
	d.waitLog(`msg="schedule paused" component=beat schedule=busy`)
	out = mustCLI(t, dir, "-resume", "busy", "-skip-missed")
	if !regexp.MustCompile(`resumed busy: \d+ missed instants skipped`).MatchString(out) {
		t.Errorf("-resume: %q", out)
	}
	d.waitLog(`msg="schedule resumed" component=beat schedule=busy`)
	if out := mustCLI(t, dir, "-resume", "busy"); !strings.Contains(out, "busy was not paused") {
		t.Errorf("second -resume: %q", out)
	}
}

// TestLogOutputOfSuccessfulRun: a task with log_output = true logs a
// successful run's output with its "job done" line; other tasks do not.
func TestLogOutputOfSuccessfulRun(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.loud]
command = ["echo", "hello from loud"]
log_output = true
[tasks.quiet]
command = ["echo", "hello from quiet"]
[[schedule]]
name = "loud"
cron = "@yearly"
task = "loud"
[[schedule]]
name = "quiet"
cron = "@yearly"
task = "quiet"
`)
	d := startDaemon(t, dir, nil)
	mustCLI(t, dir, "-trigger", "loud")
	mustCLI(t, dir, "-trigger", "quiet")
	log := d.waitLogCount(`msg="job done"`, 2)
	if !regexp.MustCompile(`msg="job done" .*job_type=loud .*output="hello from loud\\n"`).MatchString(log) {
		t.Errorf("the loud task's output is not on its job done line:\n%s", log)
	}
	if strings.Contains(log, "hello from quiet") {
		t.Errorf("the quiet task's output is logged:\n%s", log)
	}
	bad := filepath.Join(dir, "bad.toml")
	writeFile(t, bad, "[tasks.t]\ncommand = [\"true\"]\nlog_output = \"yes\"\n")
	if _, errs, code := cli(t, dir, "-check", "-config", bad); code != ExitUsage || !strings.Contains(errs, "log_output") {
		t.Errorf("-check with log_output = \"yes\": exit %d\n%s", code, errs)
	}
}
