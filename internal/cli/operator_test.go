package cli

import (
	"bytes"
	"context"
	"database/sql"
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

	"github.com/scheduler-run/scheduler/internal/engine"
)

// runBinary runs bin once in dir with env added to the environment, and
// returns its stdout, stderr and exit code.
func runBinary(t testing.TB, bin, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return out.String(), errb.String(), 0
}

// TestEmptyModeFlagStartsNothing: a mode flag given an empty or zero value,
// as `-trigger "$NAME"` with NAME unset, exits 2 without starting the daemon
// or touching the database.
func TestEmptyModeFlagStartsNothing(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-trigger", ""}, {"-next", ""}, {"-pause", ""}, {"-resume", ""}, {"-retry", ""},
		{"-backfill", "", "-from", "2026-01-01T00:00:00Z", "-to", "2026-01-02T00:00:00Z"},
		{"-from", "", "-backfill", "s", "-to", ""}, {"-job", ""}, {"-backup", ""}, {"-cancel", "0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "s"
cron = "@every 1s"
task = "rec"
`)
			_, errs, code := cli(t, dir, args...)
			if code != ExitUsage {
				t.Errorf("scheduler %q: exit %d, want %d\n%s", args, code, ExitUsage, errs)
			}
			if !strings.Contains(errs, args[0]) || strings.Contains(errs, "scheduler started") {
				t.Errorf("scheduler %q: stderr does not name %s, or a daemon started:\n%s", args, args[0], errs)
			}
			if _, err := os.Stat(filepath.Join(dir, "scheduler.db")); err == nil {
				t.Errorf("scheduler %q created a database", args)
			}
		})
	}
}

// TestVersionComesFromTheBuild: without flags -version prints what the go
// command stamped into the binary (`go version -m`), never a bare "dev"
// while it knows better; a release build's -ldflags "-X main.version=..."
// overrides it.
func TestVersionComesFromTheBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	meta, err := exec.Command("go", "version", "-m", binary).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	want := "dev"
	for _, line := range strings.Split(string(meta), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod" && f[2] != "(devel)":
			want = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") && want == "dev":
			want = "dev-" + strings.TrimPrefix(f[1], "vcs.revision=")[:12]
		}
	}
	if out := mustCLI(t, dir, "-version"); !strings.HasPrefix(out, "scheduler "+want) {
		t.Errorf("-version = %q, want the stamped %q", out, want)
	}
	out, _, code := runBinary(t, releaseBinary(t), dir, nil, "-version")
	if got, want := strings.TrimSpace(out), "scheduler "+releaseVersion; code != 0 || got != want {
		t.Errorf("-version with -X main.version: exit %d, %q, want %q", code, got, want)
	}
}

// TestReleaseBuildIgnoresTestClock: only a binary built with the
// schedulertest tag honours SCHEDULER_TEST_CLOCK_OFFSET_FILE; a release
// build reads the wall clock whatever the environment says.
func TestReleaseBuildIgnoresTestClock(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "yearly"
cron = "0 0 1 1 *"
task = "rec"
`)
	offset := filepath.Join(dir, "offset")
	writeFile(t, offset, "17520h") // two years
	env := []string{"SCHEDULER_TEST_CLOCK_OFFSET_FILE=" + offset}
	nextRun := regexp.MustCompile(`\d{4}-01-01T00:00:00Z`)
	check := func(bin string, env []string) string {
		t.Helper()
		out, errs, code := runBinary(t, bin, dir, env, "-check")
		if code != 0 || nextRun.FindString(out) == "" {
			t.Fatalf("%s -check: exit %d\n%s%s", bin, code, out, errs)
		}
		return nextRun.FindString(out)
	}
	release := releaseBinary(t)
	if plain, shifted := check(binary, nil), check(binary, env); plain == shifted {
		t.Fatalf("the test build ignores the offset file: next run %s with and without it", plain)
	}
	if plain, shifted := check(release, nil), check(release, env); plain != shifted {
		t.Errorf("a release build honours the test clock: next run %s, %s with the offset file", plain, shifted)
	}
}

// holdWriteLock opens the queue file at path (creating it) and holds its
// write lock, as another process in BEGIN IMMEDIATE would, until the test
// ends.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	q, err := engine.Open(ctx, path, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.ExecContext(ctx, "ROLLBACK")
		conn.Close()
		db.Close()
	})
}

// hasOpen reports whether process pid has the file path open.
func hasOpen(pid int, path string) bool {
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); err == nil && target == path {
			return true
		}
	}
	return false
}

// TestCommandInterruptedBySignal: a -trigger or -backfill waiting for a write
// lock another connection holds stops at SIGINT (or SIGTERM), promptly,
// with exit 130 and a message saying nothing was changed.
func TestCommandInterruptedBySignal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		sig  syscall.Signal
		args []string
	}{
		{"trigger SIGINT", syscall.SIGINT, []string{"-trigger", "s"}},
		{"backfill SIGTERM", syscall.SIGTERM, []string{"-backfill", "s", "-from", "2026-01-01T00:00:00Z", "-to", "2026-01-01T01:00:00Z"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := setup(t, `
[scheduler]
db = "q.db"
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "s"
cron = "*/5 * * * *"
task = "rec"
`)
			db := filepath.Join(dir, "q.db")
			holdWriteLock(t, db)
			cmd := exec.Command(binary, tt.args...)
			cmd.Dir = dir
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// Once the command has the database open it is past installing
			// its signal handler and is waiting for the lock.
			eventually(t, "the command opening the database", func() bool { return hasOpen(cmd.Process.Pid, db) })
			cmd.Process.Signal(tt.sig)
			var err error
			select {
			case err = <-exited:
			case <-time.After(deadline): // failure deadline, not a sync point
				cmd.Process.Kill()
				t.Fatalf("%v did not stop after %v", tt.args, tt.sig)
			}
			if code := exitCodeOf(err); code != ExitInterrupted {
				t.Errorf("%v after %v: exit %d, want %d\nstderr: %s", tt.args, tt.sig, code, ExitInterrupted, errb.String())
			}
			if want := "interrupted by " + map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM"}[tt.sig]; !strings.Contains(errb.String(), want) {
				t.Errorf("stderr %q does not say %q", errb.String(), want)
			}
		})
	}
}

// TestManualRunIsNotScheduled: a plain -trigger runs with an empty
// SCHEDULER_SCHEDULED_AT, and -status shows it as the last manual run, not
// as the schedule's last scheduled instant.
func TestManualRunIsNotScheduled(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "runs.log"]
[[schedule]]
name = "s"
cron = "@every 1s"
task = "rec"
`)
	startDaemon(t, dir, nil)
	waitRecords(t, filepath.Join(dir, "runs.log"), 1)
	out := mustCLI(t, dir, "-trigger", "s", "-key", "by-hand")
	id := regexp.MustCompile(`enqueued job (\d+)`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("trigger: %q", out)
	}
	var manual record
	eventually(t, "the manual run recorded", func() bool {
		for _, r := range readRecords(t, filepath.Join(dir, "runs.log")) {
			if strings.Contains(r.key, "|manual|by-hand") {
				manual = r
				return true
			}
		}
		return false
	})
	if manual.scheduledAt != "-" {
		t.Errorf("manual run had SCHEDULER_SCHEDULED_AT=%s, want it empty", manual.scheduledAt)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Schedules) != 1 {
		t.Fatalf("status schedules: %+v", rep.Schedules)
	}
	s := rep.Schedules[0]
	if s.LastManualJobID == nil || strconv.FormatInt(*s.LastManualJobID, 10) != id[1] || deref(s.LastManualRun) == "" {
		t.Errorf("status: last manual run %q job %v, want job %s", deref(s.LastManualRun), s.LastManualJobID, id[1])
	}
	if s.LastJobID == nil || strconv.FormatInt(*s.LastJobID, 10) == id[1] || deref(s.LastRun) == "" {
		t.Errorf("status: last scheduled run %q is job %v: the manual one, or none", deref(s.LastRun), s.LastJobID)
	}
	table := mustCLI(t, dir, "-status")
	if !strings.Contains(table, "LAST MANUAL RUN") {
		t.Errorf("-status has no manual-run column:\n%s", table)
	}
}

// TestTriggerItemAndPayload: -item runs one fan-out item; an unknown item
// lists the valid ones; a -payload that sets an item's own key is a usage
// error naming the key, since the jobs would carry that item's label and key
// while running something else.
func TestTriggerItemAndPayload(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "monthly"
cron = "0 0 1 * *"
task = "rec"
for_each = [ { customer = "acme" }, { customer = "globex" }, { customer = "initech" } ]
`)
	_, errs, code := cli(t, dir, "-trigger", "monthly", "-payload", `{"customer": 42}`)
	if code != ExitUsage || !strings.Contains(errs, `"customer"`) {
		t.Errorf("-payload over an item key: exit %d, want %d naming the key:\n%s", code, ExitUsage, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "scheduler.db")); err == nil {
		t.Error("a rejected trigger created the database")
	}
	createDB(t, filepath.Join(dir, "scheduler.db"))
	_, errs, code = cli(t, dir, "-trigger", "monthly", "-item", "hooli")
	if code != ExitUsage || !strings.Contains(errs, "customer=acme; customer=globex; customer=initech") {
		t.Errorf("-item hooli: exit %d, want %d listing the items:\n%s", code, ExitUsage, errs)
	}
	out := mustCLI(t, dir, "-trigger", "monthly", "-item", "globex", "-key", "rerun")
	if n := strings.Count(out, "enqueued job"); n != 1 || !strings.Contains(out, "monthly|customer=globex|manual|rerun") {
		t.Errorf("-item globex enqueued %d jobs:\n%s", n, out)
	}
	var job jobView
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-job", "monthly|customer=globex|manual|rerun", "-json")), &job); err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	json.Unmarshal(job.Payload, &payload)
	if job.Item != "customer=globex" || payload["customer"] != "globex" || job.ScheduledAt != "" {
		t.Errorf("job of -item globex: item %q payload %s scheduled at %q", job.Item, job.Payload, job.ScheduledAt)
	}
}
