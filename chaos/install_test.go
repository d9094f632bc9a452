package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// systemdPath is the PATH systemd gives a service that sets none.
const systemdPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// TestInstallStepsLeadToSuccessfulRuns follows README's "Running under
// systemd" steps literally, under a temporary root instead of /, and runs
// the installed binary as the installed unit would: its Environment=,
// WorkingDirectory= and UMask=, systemd's default PATH, ExecStartPre= then
// ExecStart=. Triggered runs of every example job must succeed, the reports
// must land in the state directory, and the commands must see their
// schedule's TZ. Only the sandboxing itself (user, namespaces, system-call
// filter) is not reproduced; systemd-analyze verify checks the unit and its
// drop-ins where it is installed.
func TestInstallStepsLeadToSuccessfulRuns(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	root, clone, home := t.TempDir(), t.TempDir(), t.TempDir()
	// A clone: the files the steps install, and the binary `go build` made.
	for _, f := range []string{"schedules.toml", "examples", "deploy"} {
		if out, err := exec.Command("cp", "-R", filepath.Join(repo, f), clone).CombinedOutput(); err != nil {
			t.Fatalf("copy %s: %v\n%s", f, err, out)
		}
	}
	if out, err := exec.Command("cp", binary, filepath.Join(clone, "scheduler")).CombinedOutput(); err != nil {
		t.Fatalf("copy binary: %v\n%s", err, out)
	}
	// What every systemd host has.
	for _, d := range []string{"usr/local/bin", "etc/systemd/system", "var/lib"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}

	script := installSteps(t, filepath.Join(repo, "README.md"))
	steps := exec.Command("sh", "-eux", "-c", script)
	steps.Dir, steps.Env = clone, []string{"PATH=" + systemdPath, "ROOT=" + root}
	if out, err := steps.CombinedOutput(); err != nil {
		t.Fatalf("install steps: %v\n%s", err, out)
	}

	unit := readUnit(t, filepath.Join(root, "etc/systemd/system/scheduler.service"))
	// Paths of the host, moved under root. The installed config names them
	// too; rewriting it stands in for a chroot.
	reroot := func(s string) string {
		return regexp.MustCompile(`(^|[\s="])/(etc|var/lib|usr/local)/`).ReplaceAllString(s, "${1}"+root+"/$2/")
	}
	config := filepath.Join(root, "etc/scheduler/schedules.toml")
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(reroot(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, "var/lib", unit.get(t, "StateDirectory"))
	if err := os.Mkdir(state, 0o700); err != nil { // StateDirectoryMode=0700
		t.Fatal(err)
	}
	workDir := reroot(unit.get(t, "WorkingDirectory"))
	if workDir != state {
		t.Fatalf("WorkingDirectory=%s is not the state directory %s", workDir, state)
	}
	env := []string{"PATH=" + systemdPath}
	for _, e := range unit.all("Environment") {
		env = append(env, strings.Fields(reroot(e))...)
	}
	umask := unit.get(t, "UMask")
	// command returns an Exec*= line as an exec.Cmd under the unit's
	// settings, the binary replaced by the installed one under root.
	command := func(ctx context.Context, line string) *exec.Cmd {
		args := strings.Fields(reroot(line))
		cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `umask "$0" && exec "$@"`, umask}, args...)...)
		cmd.Dir, cmd.Env = workDir, env
		return cmd
	}
	db := filepath.Join(state, "scheduler.db")

	ctx, cancel := context.WithTimeout(t.Context(), 2*deadline)
	defer cancel()
	pre := unit.get(t, "ExecStartPre")
	out, err := command(ctx, pre).CombinedOutput()
	if err != nil {
		t.Fatalf("ExecStartPre=%s: %v\n%s", pre, err, out)
	}
	if !strings.Contains(string(out), "database "+db+"\n") {
		t.Errorf("ExecStartPre=%s names another database than %s:\n%s", pre, db, out)
	}

	daemon := command(ctx, unit.get(t, "ExecStart"))
	stderr, err := daemon.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logs bytes.Buffer
	started := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.OnceFunc(func() { close(started) })
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), `"msg":"scheduler started"`) {
				once()
			}
		}
		exited <- daemon.Wait()
	}()
	t.Cleanup(func() {
		daemon.Process.Signal(syscall.SIGKILL)
		if t.Failed() {
			mu.Lock()
			t.Logf("daemon log:\n%s", logs.String())
			mu.Unlock()
		}
	})
	select {
	case <-started:
	case err := <-exited:
		t.Fatalf("daemon exited before starting: %v", err)
	case <-ctx.Done():
		t.Fatal("daemon did not start")
	}

	// The operator's commands, from elsewhere, without flags: the config is
	// found as on the host (here through SCHEDULER_CONFIG, since the test
	// cannot use /etc), the database through the config.
	operator := []string{"PATH=" + systemdPath, "SCHEDULER_CONFIG=" + config}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, filepath.Join(root, "usr/local/bin/scheduler"), args...)
		cmd.Dir, cmd.Env = home, operator
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("scheduler %v: %v\n%s%s", args, err, out, ee.Stderr)
			}
			t.Fatalf("scheduler %v: %v", args, err)
		}
		return string(out)
	}
	var ids []string
	for _, s := range []string{"nightly-report", "hourly-cleanup", "heartbeat"} {
		for _, m := range regexp.MustCompile(`enqueued job (\d+)`).FindAllStringSubmatch(cli("-trigger", s), -1) {
			ids = append(ids, m[1])
		}
	}
	if len(ids) != 5 {
		t.Fatalf("triggered %d jobs, want 5 (3 reports, cleanup, heartbeat)", len(ids))
	}
	stateRE := regexp.MustCompile(`(?m)^state\s+(\w+)$`)
	states := map[string]string{}
	eventually(t, "the triggered jobs to finish", func() bool {
		for _, id := range ids {
			if m := stateRE.FindStringSubmatch(cli("-job", id)); m != nil {
				states[id] = m[1]
			}
			if s := states[id]; s != "done" && s != "dead" {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if states[id] != "done" {
			t.Errorf("job %s: %s, want done:\n%s", id, states[id], cli("-job", id))
		}
	}
	var status struct {
		Database string `json:"database"`
		Dead     int    `json:"dead"`
	}
	if err := json.Unmarshal([]byte(cli("-status", "-json")), &status); err != nil {
		t.Fatal(err)
	}
	if status.Database != db || status.Dead != 0 {
		t.Errorf("-status: database %s, %d dead; want %s, none dead", status.Database, status.Dead, db)
	}
	if job := cli("-job", ids[len(ids)-1]); !strings.Contains(job, "alive at") {
		t.Errorf("heartbeat job printed no \"alive at\":\n%s", job)
	}
	reports, err := filepath.Glob(filepath.Join(state, "reports", "*.txt"))
	if err != nil || len(reports) != 3 {
		t.Fatalf("reports in the state directory: %v, %v; want 3", reports, err)
	}
	for _, r := range reports {
		fi, err := os.Stat(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(r)
		if fi.Mode().Perm() != 0o600 || !strings.Contains(string(b), "(TZ Europe/Istanbul)") {
			t.Errorf("report %s: mode %v, want 0600 (UMask=%s), and the schedule's TZ in\n%s", r, fi.Mode().Perm(), umask, b)
		}
	}

	daemon.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("daemon exit after SIGTERM: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("daemon did not exit after SIGTERM")
	}

	verifyUnit(t, filepath.Join(root, "etc/systemd/system/scheduler.service"), filepath.Join(root, "usr/local/bin/scheduler"), filepath.Join(clone, "deploy/systemd/scheduler.service.d"))
}

// installSteps returns README's "Running under systemd" commands as a
// script that installs under $ROOT: sudo dropped, absolute host paths moved
// under $ROOT, `go build` (done by TestMain) and systemctl left out.
func installSteps(t *testing.T, readme string) string {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	i := strings.Index(text, "## Running under systemd")
	if i < 0 {
		t.Fatal("README has no \"Running under systemd\" section")
	}
	text = text[i:]
	start := strings.Index(text, "```sh\n")
	end := strings.Index(text[start+6:], "```")
	if start < 0 || end < 0 {
		t.Fatal("README's \"Running under systemd\" has no sh block")
	}
	var script []string
	for _, line := range strings.Split(text[start+6:start+6+end], "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "go build ") || strings.Contains(line, "systemctl ") {
			continue
		}
		line = strings.TrimPrefix(line, "sudo ")
		line = regexp.MustCompile(`(\s)/(etc|var/lib|usr/local)/`).ReplaceAllString(line, `$1"$$ROOT"/$2/`)
		script = append(script, line)
	}
	if len(script) < 3 {
		t.Fatalf("README's install steps are too few to test: %q", script)
	}
	return strings.Join(script, "\n")
}

// unitFile is the [Service] settings of a unit: key -> values in order.
type unitFile map[string][]string

func readUnit(t *testing.T, path string) unitFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unitFile{}
	section := ""
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			u[k] = append(u[k], v)
		}
	}
	return u
}

func (u unitFile) all(key string) []string { return u[key] }

// get returns the one value of key; a prefix such as "-" (ignore failure)
// would change what the test proves, so it is an error.
func (u unitFile) get(t *testing.T, key string) string {
	t.Helper()
	if len(u[key]) != 1 || u[key][0] == "" || strings.ContainsAny(u[key][0][:1], "-@:+!") {
		t.Fatalf("unit: %s=%q, want one plain value", key, u[key])
	}
	return u[key][0]
}

// verifyUnit runs systemd-analyze verify on the installed unit with every
// shipped drop-in applied, its binary path pointed at one that exists.
func verifyUnit(t *testing.T, unit, bin, dropIns string) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: unit not verified")
		return
	}
	dir := t.TempDir()
	data, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "scheduler.service"), bytes.ReplaceAll(data, []byte("/usr/local/bin/scheduler"), []byte(bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(dropIns, "*.conf.example"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("drop-ins in %s: %v %v", dropIns, examples, err)
	}
	if err := os.Mkdir(filepath.Join(dir, "scheduler.service.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range examples {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "scheduler.service.d", strings.TrimSuffix(filepath.Base(e), ".example")), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "verify", filepath.Join(dir, "scheduler.service")).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestInstalledExampleIsTheCloneExample: deploy/schedules.toml, the
// example as installed, is schedules.toml with the scripts' installed
// paths and the unit's database, nothing else; and the examples need none
// of the drop-ins that lift the unit's hardening (no /proc, which
// ProcSubset=pid hides).
func TestInstalledExampleIsTheCloneExample(t *testing.T) {
	t.Parallel()
	settings := func(path string) string {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for line := range strings.Lines(string(data)) {
			// The examples hold no " #" inside a string.
			line, _, _ = strings.Cut(line, " #")
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
		return strings.Join(lines, "\n")
	}
	clone := settings("../schedules.toml")
	clone = strings.ReplaceAll(clone, `"./examples/`, `"/usr/local/libexec/scheduler/`)
	clone = strings.Replace(clone, `db = "scheduler.db"`, `db = "/var/lib/scheduler/scheduler.db"`, 1)
	if installed := settings("../deploy/schedules.toml"); installed != clone {
		t.Errorf("deploy/schedules.toml is not schedules.toml as installed:\n%s\nwant:\n%s", installed, clone)
	}
	scripts, err := filepath.Glob("../examples/*.sh")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("examples: %v %v", scripts, err)
	}
	for _, s := range scripts {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range []string{"/proc/", "uptime", "nice ", "ulimit"} {
			for line := range strings.Lines(string(data)) {
				if !strings.HasPrefix(strings.TrimSpace(line), "#") && strings.Contains(line, bad) {
					t.Errorf("%s uses %q, which the unit's hardening denies: %s", s, bad, line)
				}
			}
		}
		if !strings.Contains(clone, filepath.Base(s)) {
			t.Errorf("%s is installed but no task runs it", s)
		}
	}
}
