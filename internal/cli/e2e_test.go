package cli

import (
	"context"
	"encoding/json"
	"net"
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

// setup writes a config and the recorder script into a fresh directory.
func setup(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "record.sh"), recorderScript)
	writeFile(t, filepath.Join(dir, "schedules.toml"), config)
	return dir
}

// setupDB is setup with the database made beside the config, as a
// daemon's first start makes it (no operator command creates one), for
// tests of operator commands on a database no daemon runs on.
func setupDB(t *testing.T, config string) string {
	t.Helper()
	dir := setup(t, config)
	createDB(t, filepath.Join(dir, "scheduler.db"))
	return dir
}

// createDB makes the database at path as the daemon's start does.
func createDB(t testing.TB, path string) {
	t.Helper()
	q, err := engine.Open(context.Background(), path, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	q.Close()
}

// TestScheduledRunsHappenAtTheirInstants: an @every 1s and a seconds-field
// cron each run once per instant, with the instant in their environment.
func TestScheduledRunsHappenAtTheirInstants(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "{{.file}}"]
[[schedule]]
name = "every"
cron = "@every 1s"
task = "rec"
payload = { file = "every.log" }
[[schedule]]
name = "seconds"
cron = "*/2 * * * * *"
task = "rec"
payload = { file = "seconds.log" }
`)
	startDaemon(t, dir, nil)
	every := waitRecords(t, filepath.Join(dir, "every.log"), 3)
	secs := waitRecords(t, filepath.Join(dir, "seconds.log"), 2)
	for name, rs := range map[string][]record{"every": every, "seconds": secs} {
		seen := map[string]bool{}
		for _, r := range rs {
			if seen[r.scheduledAt] {
				t.Errorf("%s: instant %s ran twice", name, r.scheduledAt)
			}
			seen[r.scheduledAt] = true
			at, err := time.Parse(time.RFC3339, r.scheduledAt)
			if err != nil {
				t.Fatalf("%s: SCHEDULER_SCHEDULED_AT %q: %v", name, r.scheduledAt, err)
			}
			if name == "seconds" && at.Second()%2 != 0 {
				t.Errorf("seconds: ran for %s, not on an even second", r.scheduledAt)
			}
			if !strings.HasPrefix(r.key, name+"|") || !strings.HasSuffix(r.key, "|"+at.UTC().Format(time.RFC3339)) {
				t.Errorf("%s: key %q is not schedule|item|instant", name, r.key)
			}
		}
	}
}

// TestTriggerFromAnotherProcessRunsPromptly: -trigger enqueues into the
// daemon's database and the daemon starts it at once; a repeated -key
// enqueues nothing.
func TestTriggerFromAnotherProcessRunsPromptly(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "trigger.log"]
[[schedule]]
name = "monthly"
cron = "0 0 1 * *"
task = "rec"
for_each = [ { customer = "acme" }, { customer = "globex" } ]
`)
	startDaemon(t, dir, nil)
	start := time.Now()
	out := mustCLI(t, dir, "-trigger", "monthly", "-key", "deploy-42")
	if got := strings.Count(out, "enqueued job"); got != 2 {
		t.Fatalf("trigger printed %q, want 2 jobs (one per item)", out)
	}
	rs := waitRecords(t, filepath.Join(dir, "trigger.log"), 2)
	t.Logf("trigger to both runs recorded: %v", time.Since(start))
	for _, r := range rs {
		if r.scheduledAt != "-" || !strings.Contains(r.key, "|manual|deploy-42") {
			t.Errorf("record %+v", r)
		}
	}
	out = mustCLI(t, dir, "-trigger", "monthly", "-key", "deploy-42")
	if strings.Contains(out, "enqueued job") || !strings.Contains(out, "nothing enqueued") {
		t.Errorf("repeated key: %q", out)
	}
	if _, _, code := cli(t, dir, "-trigger", "nope"); code != 2 {
		t.Errorf("-trigger of an unknown schedule: exit %d, want 2", code)
	}
}

// TestFailingCommandIsRetriedThenDead: exit 1 is retried with backoff until
// max_attempts, then the job is dead with its attempts and output on record;
// -retry revives it.
func TestFailingCommandIsRetriedThenDead(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.fail]
command = ["sh", "-c", "echo failing attempt $SCHEDULER_ATTEMPT; exit 3"]
max_attempts = 3
backoff = "200ms"
max_backoff = "400ms"
[[schedule]]
name = "f"
cron = "0 0 1 1 *"
task = "fail"
`)
	startDaemon(t, dir, nil)
	out := mustCLI(t, dir, "-trigger", "f")
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
	if job.Attempt != 3 || len(job.Attempts) != 3 {
		t.Fatalf("dead after %d attempts (%d recorded), want 3", job.Attempt, len(job.Attempts))
	}
	for i, a := range job.Attempts {
		want := "retry"
		if i == 2 {
			want = "dead"
		}
		if a.Outcome != want || !strings.Contains(a.Output, "failing attempt "+strconv.Itoa(i+1)) || !strings.Contains(a.Error, "exit code 3") {
			t.Errorf("attempt %d: %s, output %q, error %q", i+1, a.Outcome, a.Output, a.Error)
		}
	}
	if dead := mustCLI(t, dir, "-dead"); !strings.Contains(dead, id[1]) {
		t.Errorf("-dead does not list job %s: %s", id[1], dead)
	}
	if job.RetriedAt != "" {
		t.Errorf("retried_at before any -retry = %q, want none", job.RetriedAt)
	}
	mustCLI(t, dir, "-retry", id[1])
	eventually(t, "revived job dead again", func() bool {
		out, _, _ := cli(t, dir, "-job", id[1], "-json")
		json.Unmarshal([]byte(out), &job)
		return job.State == "dead" && job.Attempt == 6
	})
	if job.RetriedAt == "" {
		t.Errorf("retried_at after -retry is empty")
	}
	if text := mustCLI(t, dir, "-job", id[1]); !regexp.MustCompile(`(?m)^retried at +` + regexp.QuoteMeta(job.RetriedAt) + `$`).MatchString(text) {
		t.Errorf("-job does not show retried at %s:\n%s", job.RetriedAt, text)
	}
}

// pidAlive reports whether pid names a live (not zombie) process.
func pidAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// TestTimedOutCommandLeavesNoProcess: a command that forks a grandchild and
// ignores SIGTERM is killed with its whole group at its timeout.
func TestTimedOutCommandLeavesNoProcess(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.stuck]
command = ["sh", "-c", "trap '' TERM; (trap '' TERM; sleep 300) & echo $! > grandchild.pid; echo $$ > child.pid; sleep 300"]
timeout = "1s"
kill_grace = "500ms"
max_attempts = 1
[[schedule]]
name = "s"
cron = "0 0 1 1 *"
task = "stuck"
`)
	d := startDaemon(t, dir, nil)
	mustCLI(t, dir, "-trigger", "s")
	d.waitLog("job dead")
	for _, f := range []string{"child.pid", "grandchild.pid"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		eventually(t, f+" gone", func() bool { return !pidAlive(pid) })
	}
}

// TestSighupWithBrokenFileKeepsOldSchedules: a reload of a bad file logs
// every error and changes nothing; a good file then takes effect.
func TestSighupWithBrokenFileKeepsOldSchedules(t *testing.T) {
	t.Parallel()
	good := `
[tasks.rec]
command = ["./record.sh", "{{.file}}"]
[[schedule]]
name = "a"
cron = "@every 1s"
task = "rec"
payload = { file = "a.log" }
`
	dir := setup(t, good)
	d := startDaemon(t, dir, nil)
	waitRecords(t, filepath.Join(dir, "a.log"), 1)
	writeFile(t, filepath.Join(dir, "schedules.toml"), good+`
[[schedule]]
name = "b"
cron = "61 * * * *"
task = "nope"
bogus = 1
`)
	d.signal(syscall.SIGHUP)
	log := d.waitLog("reload rejected: keeping the running config")
	for _, want := range []string{"cron", "nope", "bogus"} {
		if !strings.Contains(log, want) {
			t.Errorf("reload log does not name %q:\n%s", want, log)
		}
	}
	n := len(readRecords(t, filepath.Join(dir, "a.log")))
	waitRecords(t, filepath.Join(dir, "a.log"), n+2)
	writeFile(t, filepath.Join(dir, "schedules.toml"), strings.ReplaceAll(good, `"a"`, `"c"`))
	d.signal(syscall.SIGHUP)
	d.waitLog("config reloaded")
	// c writes the same file; a's jobs queued before the reload may still
	// finish after c's first run on a loaded machine.
	eventually(t, "a run of schedule c", func() bool {
		for _, r := range readRecords(t, filepath.Join(dir, "a.log")) {
			if strings.HasPrefix(r.key, "c|") {
				return true
			}
		}
		return false
	})
}

// TestSigtermDuringLongJobExitsWithinGrace: SIGTERM stops claiming, the
// running job gets the grace, then is cancelled and released to pending with
// its attempt given back; the daemon exits 0.
func TestSigtermDuringLongJobExitsWithinGrace(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[scheduler]
shutdown_grace = "1s"
[tasks.long]
command = ["sh", "-c", "echo $$ > long.pid; exec sleep 300"]
[[schedule]]
name = "l"
cron = "0 0 1 1 *"
task = "long"
`)
	d := startDaemon(t, dir, nil)
	out := mustCLI(t, dir, "-trigger", "l")
	id := regexp.MustCompile(`enqueued job (\d+)`).FindStringSubmatch(out)[1]
	eventually(t, "job started", func() bool { _, err := os.Stat(filepath.Join(dir, "long.pid")); return err == nil })
	start := time.Now()
	d.signal(syscall.SIGTERM)
	if err := d.wait(); err != nil {
		t.Fatalf("daemon exit: %v\n%s", err, d.log())
	}
	t.Logf("exited %v after SIGTERM (grace 1s)", time.Since(start))
	var job jobView
	out = mustCLI(t, dir, "-job", id, "-json")
	json.Unmarshal([]byte(out), &job)
	if job.State != "pending" || job.Attempt != 0 {
		t.Errorf("job after shutdown: %s attempt %d, want pending with the attempt given back", job.State, job.Attempt)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "long.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pidAlive(pid) {
		t.Errorf("the job's process %d outlived the daemon", pid)
	}
}

// TestSdNotify: READY, RELOADING, STOPPING with EXTEND_TIMEOUT_USEC and
// WATCHDOG arrive on the socket named by NOTIFY_SOCKET.
func TestSdNotify(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "a"
cron = "0 0 1 1 *"
task = "rec"
`)
	sock := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	expect := func(prefix string) string {
		t.Helper()
		timeout := time.After(deadline)
		for {
			select {
			case m, ok := <-msgs:
				if !ok {
					t.Fatalf("socket closed waiting for %s", prefix)
				}
				if strings.HasPrefix(m, prefix) {
					return m
				}
			case <-timeout:
				t.Fatalf("no %s message", prefix)
			}
		}
	}
	d := startDaemon(t, dir, []string{"NOTIFY_SOCKET=" + sock, "WATCHDOG_USEC=400000"})
	expect("READY=1")
	expect("WATCHDOG=1")
	d.signal(syscall.SIGHUP)
	if m := expect("RELOADING=1"); !strings.Contains(m, "MONOTONIC_USEC=") {
		t.Errorf("RELOADING without MONOTONIC_USEC: %q", m)
	}
	expect("READY=1")
	d.signal(syscall.SIGTERM)
	// shutdown_grace 30s + kill_grace 10s + 15s: systemd's stop timeout
	// cannot cut the grace short.
	if m := expect("STOPPING=1"); !strings.Contains(m, "EXTEND_TIMEOUT_USEC=55000000") {
		t.Errorf("STOPPING without the stop budget: %q", m)
	}
	if err := d.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestArgumentsArePassedLiterally: no shell ever sees a command's
// arguments, including ones templated from the payload.
func TestArgumentsArePassedLiterally(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.echo]
command = ["/bin/echo", "; touch pwned", "{{.name}}", "$(touch pwned2)"]
[[schedule]]
name = "e"
cron = "0 0 1 1 *"
task = "echo"
payload = { name = "a && touch pwned3" }
`)
	startDaemon(t, dir, nil)
	out := mustCLI(t, dir, "-trigger", "e", "-payload", `{"name": "x; touch pwned4 #"}`)
	id := regexp.MustCompile(`enqueued job (\d+)`).FindStringSubmatch(out)[1]
	var job jobView
	eventually(t, "job done", func() bool {
		out, _, _ := cli(t, dir, "-job", id, "-json")
		json.Unmarshal([]byte(out), &job)
		return job.State == "done"
	})
	if got, want := strings.TrimSpace(job.Attempts[0].Output), "; touch pwned x; touch pwned4 # $(touch pwned2)"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	for _, f := range []string{"pwned", "pwned2", "pwned3", "pwned4"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was created: an argument reached a shell", f)
		}
	}
}

// TestCheckValidatesWithoutTouchingTheDatabase: -check prints next runs and
// exits 0, or prints every problem with file:line and exits 2; neither
// creates a database.
func TestCheckValidatesWithoutTouchingTheDatabase(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[scheduler]
timezone = "America/New_York"
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "nightly"
cron = "30 2 * * *"
task = "rec"
`)
	out := mustCLI(t, dir, "-check")
	if !strings.Contains(out, "nightly") || !regexp.MustCompile(`T02:30:00-0[45]:00`).MatchString(out) {
		t.Errorf("-check output lacks the next run in its zone:\n%s", out)
	}
	writeFile(t, filepath.Join(dir, "schedules.toml"), `
[tasks.rec]
command = ["./record.sh", "x.log"]
[[schedule]]
name = "bad"
cron = "0 0 31 2 *"
task = "rec"
[[schedule]]
name = "worse"
cron = "* * * * *"
task = "missing"
timezone = "Mars/Olympus"
`)
	_, errs, code := cli(t, dir, "-check")
	if code != 2 {
		t.Errorf("-check of a bad file: exit %d, want 2", code)
	}
	for _, want := range []string{"schedules.toml:", "bad", "worse", "missing", "Mars/Olympus"} {
		if !strings.Contains(errs, want) {
			t.Errorf("-check errors lack %q:\n%s", want, errs)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "scheduler.db")); err == nil {
		t.Error("-check created a database")
	}
	if _, _, code := cli(t, dir, "-bogus"); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
	if _, _, code := cli(t, dir, "-check", "-status"); code != 2 {
		t.Errorf("two modes: exit %d, want 2", code)
	}
}

// TestSecondSigtermForcesExit: a second SIGTERM during the shutdown grace
// exits at once (status 1) instead of waiting out the grace, killing the
// running commands' process groups and giving their jobs back.
func TestSecondSigtermForcesExit(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[scheduler]
shutdown_grace = "5m"
[tasks.long]
command = ["sh", "-c", "echo $$ > long.pid; exec sleep 300"]
[[schedule]]
name = "l"
cron = "0 0 1 1 *"
task = "long"
`)
	d := startDaemon(t, dir, nil)
	mustCLI(t, dir, "-trigger", "l")
	eventually(t, "job started", func() bool { _, err := os.Stat(filepath.Join(dir, "long.pid")); return err == nil })
	d.signal(syscall.SIGTERM)
	d.waitLog("pool stopping")
	d.signal(syscall.SIGTERM)
	err := d.wait()
	if code := exitCodeOf(err); code != 1 {
		t.Fatalf("exit %v (code %d), want 1 after a forced exit", err, code)
	}
	log := d.log()
	if !strings.Contains(log, "second signal") {
		t.Errorf("no forced-exit message in the log:\n%s", log)
	}
	if strings.Contains(log, "database is closed") {
		t.Errorf("the queue was closed under the running pool:\n%s", log)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "long.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	eventually(t, "the running command killed", func() bool { return !pidAlive(pid) })
}

func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestJobWithoutHandlerWaitsForReload: a task added to the file and
// triggered before the daemon reloads is not dead ("unknown job type"): it
// waits, -status names its type as waiting for a handler, and the reload
// that adds the handler runs it.
func TestJobWithoutHandlerWaitsForReload(t *testing.T) {
	t.Parallel()
	dir := setup(t, `
[tasks.rec]
command = ["./record.sh", "a.log"]
[[schedule]]
name = "a"
cron = "0 0 1 1 *"
task = "rec"
`)
	d := startDaemon(t, dir, nil)
	writeFile(t, filepath.Join(dir, "schedules.toml"), `
[tasks.rec]
command = ["./record.sh", "a.log"]
[tasks.fresh]
command = ["./record.sh", "b.log"]
[[schedule]]
name = "a"
cron = "0 0 1 1 *"
task = "rec"
[[schedule]]
name = "b"
cron = "0 0 1 1 *"
task = "fresh"
`)
	out := mustCLI(t, dir, "-trigger", "b")
	id := regexp.MustCompile(`enqueued job (\d+)`).FindStringSubmatch(out)[1]
	var st struct {
		RunningPools      *int `json:"running_pools"`
		WaitingForHandler []struct {
			Type  string `json:"type"`
			Ready int    `json:"ready"`
		} `json:"waiting_for_handler"`
	}
	eventually(t, "-status to name the waiting type", func() bool {
		json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &st)
		return len(st.WaitingForHandler) == 1
	})
	if w := st.WaitingForHandler[0]; w.Type != "fresh" || w.Ready != 1 || st.RunningPools == nil || *st.RunningPools != 1 {
		t.Errorf("-status: %d pools, waiting %+v; want 1 pool and fresh with 1 ready job", *st.RunningPools, st.WaitingForHandler)
	}
	if text := mustCLI(t, dir, "-status"); !regexp.MustCompile(`(?m)^fresh\s+1\s+\S+`).MatchString(text) {
		t.Errorf("-status text lacks the waiting type:\n%s", text)
	}
	var job jobView
	json.Unmarshal([]byte(mustCLI(t, dir, "-job", id, "-json")), &job)
	if job.State != "pending" || job.Attempt != 0 {
		t.Fatalf("job without a handler: %s attempt %d, want pending\n%s", job.State, job.Attempt, d.log())
	}
	d.signal(syscall.SIGHUP)
	waitRecords(t, filepath.Join(dir, "b.log"), 1)
	eventually(t, "nothing waiting", func() bool {
		json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &st)
		return len(st.WaitingForHandler) == 0
	})
}
