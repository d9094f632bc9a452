package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOperatorCommandsWorkWhenTheFileIsBroken: after a SIGHUP with a
// misspelt zone the daemon keeps its config, and -status, -dead, -trigger
// and -pause work from that config, with -db or $SCHEDULER_DB or the
// default database beside the file, each warning once that the file is
// broken; the triggered job runs. Without a database to find they fail with
// the file's problems and a hint. -check still judges the file alone, and
// -status tells when the file differs from what the daemon runs.
func TestOperatorCommandsWorkWhenTheFileIsBroken(t *testing.T) {
	t.Parallel()
	good := `
[tasks.rec]
command = ["./record.sh", "trigger.log"]
[[schedule]]
name = "monthly"
cron = "0 0 1 * *"
timezone = "Europe/Paris"
task = "rec"
[[schedule]]
name = "other"
cron = "0 0 1 * *"
task = "rec"
`
	dir := setup(t, good)
	config := filepath.Join(dir, "schedules.toml")
	db := filepath.Join(dir, "scheduler.db")
	d := startDaemon(t, dir, nil)

	if out := mustCLI(t, dir, "-status"); !strings.Contains(out, "as the daemon loaded it at") {
		t.Errorf("-status of an unchanged file does not say the daemon runs it:\n%s", out)
	}
	writeFile(t, config, strings.Replace(good, "Europe/Paris", "Europe/Pariss", 1))
	d.signal(syscall.SIGHUP)
	d.waitLog("reload rejected: keeping the running config")

	env := func(extra ...string) []string {
		var out []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "SCHEDULER_") {
				out = append(out, kv)
			}
		}
		return append(out, extra...)
	}
	ways := []struct {
		name  string
		env   []string
		flags []string
	}{
		{"-db", env(), []string{"-db", db}},
		{"SCHEDULER_DB", env("SCHEDULER_DB=" + db), nil},
		{"default beside the file", env(), nil},
	}
	triggers := 0
	for _, w := range ways {
		for _, cmd := range [][]string{{"-status"}, {"-dead"}, {"-trigger", "monthly"}, {"-pause", "other"}} {
			args := append(append([]string{}, w.flags...), cmd...)
			out, errs, code := cliEnv(t, dir, w.env, args...)
			if code != 0 {
				t.Errorf("%s: scheduler %v: exit %d\nstdout: %s\nstderr: %s", w.name, args, code, out, errs)
				continue
			}
			if n := strings.Count(errs, "warning:"); n != 1 || !strings.Contains(errs, "schedules.toml is broken (1 problem(s), first: ") ||
				!strings.Contains(errs, "Europe/Pariss") || !strings.Contains(errs, "using the configuration the daemon loaded at ") ||
				!strings.Contains(errs, "run -check to see every problem") {
				t.Errorf("%s: scheduler %v: stderr does not warn once that the file is broken:\n%s", w.name, args, errs)
			}
			switch cmd[0] {
			case "-trigger":
				if !strings.Contains(out, "enqueued job") {
					t.Errorf("%s: -trigger printed %q", w.name, out)
				}
				triggers++
			case "-pause":
				// The first way pauses it; the others find it paused.
				want := "other was already paused: nothing to do\n"
				if w.name == ways[0].name {
					want = "paused other\n"
				}
				if out != want {
					t.Errorf("%s: -pause printed %q, want %q", w.name, out, want)
				}
			}
			if cmd[0] == "-status" &&
				(!strings.Contains(out, "is broken: the daemon runs what it loaded at") || !strings.Contains(out, "0 0 1 * *")) {
				t.Errorf("%s: -status does not show the running config:\n%s", w.name, out)
			}
		}
	}
	waitRecords(t, filepath.Join(dir, "trigger.log"), triggers)

	// The same broken file elsewhere, with no database beside it: nothing
	// says where the daemon's is.
	elsewhere := t.TempDir()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(elsewhere, "schedules.toml"), string(b))
	_, errs, code := cliEnv(t, elsewhere, env(), "-status")
	if code != 2 || !strings.Contains(errs, "Europe/Pariss") || !strings.Contains(errs, "hint: pass -db or set SCHEDULER_DB") {
		t.Errorf("-status without a database to find: exit %d, want 2 with the problems and a hint:\n%s", code, errs)
	}
	out, errs, code := cli(t, dir, "-check")
	if code != 2 || strings.Contains(errs, "warning:") || !strings.Contains(errs, "Europe/Pariss") {
		t.Errorf("-check of the broken file: exit %d, want 2 with its problem and no fallback\nstdout: %s\nstderr: %s", code, out, errs)
	}

	// A good file the daemon has not reloaded yet.
	writeFile(t, config, good+"# edited\n")
	if out := mustCLI(t, dir, "-status"); !strings.Contains(out, "the daemon has not reloaded it yet") {
		t.Errorf("-status of a changed file does not say so:\n%s", out)
	}
	d.signal(syscall.SIGHUP)
	d.waitLog("config reloaded")
	if out := mustCLI(t, dir, "-status"); !strings.Contains(out, "as the daemon loaded it at") {
		t.Errorf("-status after the reload does not say the daemon runs the file:\n%s", out)
	}
}
