package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// actConfig is a daily schedule in a zone three hours east of UTC, fanned
// out over two customers; no daemon runs it in these tests.
const actConfig = `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "nightly-report"
cron = "0 3 * * *"
timezone = "Europe/Istanbul"
task = "rec"
for_each = [ { customer = "acme" }, { customer = "globex" } ]
`

// oneLineError checks that a failed command said why in one line of stderr,
// without the usage text.
func oneLineError(t *testing.T, what, stderr, want string) {
	t.Helper()
	if lines := strings.Split(strings.TrimSpace(stderr), "\n"); len(lines) != 1 || strings.Contains(stderr, "Usage") || !strings.Contains(stderr, want) {
		t.Errorf("%s: stderr %q, want one line containing %q", what, stderr, want)
	}
}

// TestBackfillTakesDatesInTheScheduleZone: -from and -to of -backfill take a
// date (the whole day, in the schedule's zone) and a wall time in that zone
// as well as RFC 3339, and the instants enqueued are printed in the zone.
func TestBackfillTakesDatesInTheScheduleZone(t *testing.T) {
	t.Parallel()
	dir := setupDB(t, actConfig)
	out := mustCLI(t, dir, "-backfill", "nightly-report", "-from", "2026-11-23", "-to", "2026-11-25")
	for _, want := range []string{
		"from 2026-11-23T00:00:00+03:00 to 2026-11-25T23:59:59+03:00",
		"2026-11-23T03:00:00+03:00", "2026-11-24T03:00:00+03:00", "2026-11-25T03:00:00+03:00",
		"6 runs in range: 6 enqueued, 0 already existed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("-backfill by dates: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "2026-11-22T") || strings.Contains(out, "2026-11-26T") {
		t.Errorf("-backfill by dates went outside the days:\n%s", out)
	}
	// A wall time in the zone is the same instant as its RFC 3339 form.
	out = mustCLI(t, dir, "-backfill", "nightly-report", "-from", "2026-11-24T03:00", "-to", "2026-11-24T00:00:00Z")
	if !strings.Contains(out, "2 runs in range: 0 enqueued, 2 already existed") || !strings.Contains(out, "2026-11-24T03:00:00+03:00") {
		t.Errorf("-backfill by wall time:\n%s", out)
	}
	_, errs, code := cli(t, dir, "-backfill", "nightly-report", "-from", "23/11/2026", "-to", "2026-11-25")
	if code != ExitUsage {
		t.Errorf("-from 23/11/2026: exit %d, want %d", code, ExitUsage)
	}
	oneLineError(t, "-from 23/11/2026", errs, "Europe/Istanbul")
}

// TestJobRefsTakeKeysInTheScheduleZone: -job, -cancel and -retry take a key
// whose instant is written in the schedule's zone; -job prints the instant
// in UTC and in that zone; an unknown id or key, or a job in the wrong
// state, is a one-line error.
func TestJobRefsTakeKeysInTheScheduleZone(t *testing.T) {
	t.Parallel()
	dir := setupDB(t, actConfig)
	mustCLI(t, dir, "-backfill", "nightly-report", "-from", "2026-11-23", "-to", "2026-11-24")
	const stored = "nightly-report|customer=acme|2026-11-23T00:00:00Z"
	for _, ref := range []string{stored, "nightly-report|customer=acme|2026-11-23T03:00:00+03:00", "nightly-report|customer=acme|2026-11-23T03:00"} {
		out := mustCLI(t, dir, "-job", ref)
		if !strings.Contains(out, stored) || !strings.Contains(out, "2026-11-23T00:00:00Z (2026-11-23T03:00:00+03:00 Europe/Istanbul)") {
			t.Errorf("-job %s:\n%s", ref, out)
		}
	}
	var v jobView
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-job", stored, "-json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.ScheduledAt != "2026-11-23T00:00:00Z" || v.ScheduledAtZone != "2026-11-23T03:00:00+03:00" || v.Zone != "Europe/Istanbul" {
		t.Errorf("-job -json: scheduled_at %q, scheduled_at_zone %q, zone %q", v.ScheduledAt, v.ScheduledAtZone, v.Zone)
	}

	out := mustCLI(t, dir, "-cancel", "nightly-report|customer=globex|2026-11-24T03:00")
	if !strings.Contains(out, "nightly-report|customer=globex|2026-11-24T00:00:00Z") || !strings.Contains(out, "cancelled") {
		t.Errorf("-cancel KEY: %q", out)
	}
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-job", "nightly-report|customer=globex|2026-11-24T00:00:00Z", "-json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.State != "cancelled" {
		t.Errorf("after -cancel KEY the job is %s, want cancelled", v.State)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-cancel", "nightly-report|customer=nobody|2026-11-23T03:00"}, `no job with id or key "nightly-report|customer=nobody|2026-11-23T03:00"`},
		{[]string{"-cancel", "99999"}, `no job with id or key "99999"`},
		{[]string{"-retry", "no-such-key"}, `no job with id or key "no-such-key"`},
		{[]string{"-retry", stored}, "is pending, not dead"},
	} {
		_, errs, code := cli(t, dir, tt.args...)
		if code != ExitRuntime {
			t.Errorf("scheduler %q: exit %d, want %d", tt.args, code, ExitRuntime)
		}
		oneLineError(t, strings.Join(tt.args, " "), errs, tt.want)
	}
	_, errs, code := cli(t, dir, "-cancel", "0")
	if code != ExitUsage {
		t.Errorf("-cancel 0: exit %d, want %d", code, ExitUsage)
	}
	oneLineError(t, "-cancel 0", errs, "want a job id")
}

// TestCancelRunningJobFromAnotherProcess: -cancel KEY of a job that a daemon
// is running stops it: its process group (a shell and its sleep) is gone,
// the job is cancelled with a cancelled attempt naming who asked, and it is
// not retried.
func TestCancelRunningJobFromAnotherProcess(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.long]
command = ["./sleeper.sh"]
kill_grace = "2s"
max_attempts = 5
backoff = "1s"
[[schedule]]
name = "l"
cron = "0 0 1 1 *"
task = "long"
`)
	writeFile(t, filepath.Join(dir, "sleeper.sh"), `#!/bin/sh
echo $$ > group.pid
sleep 600 &
echo $! > sleep.pid
wait
`)
	d := startDaemon(t, dir, nil)
	out := mustCLI(t, dir, "-trigger", "l")
	m := regexp.MustCompile(`enqueued job (\d+) \(key (\S+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("-trigger: %q", out)
	}
	id, key := m[1], m[2]
	readPID := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return pid
	}
	eventually(t, "the job's processes started", func() bool { return readPID("group.pid") > 0 && readPID("sleep.pid") > 0 })
	group, sleeper := readPID("group.pid"), readPID("sleep.pid")

	out = mustCLI(t, dir, "-cancel", key)
	if !strings.Contains(out, "job "+id+" ("+key+") cancelled") {
		t.Errorf("-cancel of a running job: %q", out)
	}
	for _, pid := range []int{group, sleeper} {
		if pidAlive(pid) {
			t.Errorf("process %d of the cancelled job still runs", pid)
		}
	}
	if pids := groupMembers(t, group); len(pids) > 0 {
		t.Errorf("process group %d still has live processes %v", group, pids)
	}
	var v jobView
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-job", id, "-json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.State != "cancelled" || v.Attempt != 1 || len(v.Attempts) != 1 {
		t.Fatalf("job after -cancel: %s, attempt %d, %d attempts; want cancelled after 1", v.State, v.Attempt, len(v.Attempts))
	}
	if a := v.Attempts[0]; a.Outcome != "cancelled" || !strings.Contains(a.Error, "cancelled by ") || !strings.Contains(a.Error, "scheduler -cancel, pid") {
		t.Errorf("attempt: outcome %s, error %q; want cancelled, naming who cancelled it", a.Outcome, a.Error)
	}
	d.waitLog("job cancelled")
	// Not retried: a further trigger runs and finishes while the job stays
	// cancelled with its one attempt.
	out, errs, code := cli(t, dir, "-cancel", key)
	if code != 0 || !strings.Contains(out, "already cancelled") {
		t.Errorf("second -cancel: exit %d, %q %q", code, out, errs)
	}
	if strings.Count(d.log(), "command started") > 1 {
		t.Errorf("the cancelled job ran again:\n%s", d.log())
	}
}

// groupMembers returns the live (not zombie) processes of process group
// pgid. A zombie, dead but not yet reaped by its parent (the container's
// init may be slow or absent), still counts for kill(-pgid, 0).
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// After "(comm)": state, ppid, pgrp.
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestCancelOfAJobWhoseDaemonIsGone: -cancel of a job whose daemon was
// killed records the request, waits, and says the job still runs (exit 1);
// the next daemon reclaims the expired lease and the job ends cancelled, not
// pending, and does not run again.
func TestCancelOfAJobWhoseDaemonIsGone(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[scheduler]
lease = "2s"
[tasks.long]
command = ["sh", "-c", "echo $$ >> runs.log; exec sleep 600"]
kill_grace = "1s"
[[schedule]]
name = "l"
cron = "0 0 1 1 *"
task = "long"
`)
	d := startDaemon(t, dir, nil)
	out := mustCLI(t, dir, "-trigger", "l")
	m := regexp.MustCompile(`enqueued job (\d+) \(key (\S+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("-trigger: %q", out)
	}
	id := m[1]
	eventually(t, "the job started", func() bool { b, _ := os.ReadFile(filepath.Join(dir, "runs.log")); return len(b) > 0 })
	t.Cleanup(func() {
		// A daemon killed with SIGKILL leaves its command running.
		b, _ := os.ReadFile(filepath.Join(dir, "runs.log"))
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})
	d.signal(syscall.SIGKILL)
	d.wait()

	out, errs, code := cli(t, dir, "-cancel", id)
	if code != ExitRuntime || !strings.Contains(errs, "still running") || !strings.Contains(errs, "reclaimed") {
		t.Errorf("-cancel with no daemon: exit %d, stdout %q, stderr %q; want exit 1 saying the job still runs", code, out, errs)
	}
	// Ctrl-C ends the wait, not the request.
	errPath := filepath.Join(dir, "cancel.err")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close()
	cmd := exec.Command(binary, "-cancel", id)
	cmd.Dir, cmd.Stderr = dir, errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	eventually(t, "-cancel waiting", func() bool { b, _ := os.ReadFile(errPath); return strings.Contains(string(b), "waiting up to") })
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err = <-exited:
	case <-time.After(deadline): // failure deadline, not a sync point
		cmd.Process.Kill()
		t.Fatal("-cancel did not stop at SIGINT")
	}
	b, _ := os.ReadFile(errPath)
	if code := exitCodeOf(err); code != ExitInterrupted || !strings.Contains(string(b), "cancel requested, stopped waiting") {
		t.Errorf("-cancel interrupted: exit %d, stderr %q; want %d saying the cancel is requested", code, b, ExitInterrupted)
	}

	d2 := startDaemon(t, dir, nil)
	d2.waitLog("job lease reclaimed")
	var v jobView
	eventually(t, "job cancelled", func() bool {
		json.Unmarshal([]byte(mustCLI(t, dir, "-job", id, "-json")), &v)
		return v.State != "running"
	})
	if v.State != "cancelled" || v.Attempt != 1 || len(v.Attempts) != 1 || v.Attempts[0].Outcome != "lease_expired" {
		t.Errorf("after reclaim the job is %s after %d attempts (%+v), want cancelled with its one attempt's lease expired", v.State, v.Attempt, v.Attempts)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "runs.log")); len(strings.Fields(string(b))) != 1 {
		t.Errorf("the job ran %d times, want once", len(strings.Fields(string(b))))
	}
}
