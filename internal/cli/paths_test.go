package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestConfigPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		flag   string
		env    string
		exists []string
		want   string
	}{
		{name: "flag wins", flag: "a.toml", env: "/b.toml", exists: []string{localConfig, installedConfig}, want: "a.toml"},
		{name: "environment", env: "/b.toml", exists: []string{localConfig, installedConfig}, want: "/b.toml"},
		{name: "working directory", exists: []string{localConfig, installedConfig}, want: localConfig},
		{name: "installed", exists: []string{installedConfig}, want: installedConfig},
		{name: "none", want: localConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				if k == envConfig {
					return tt.env
				}
				return ""
			}
			exists := func(p string) bool { return slices.Contains(tt.exists, p) }
			if got := configPath(tt.flag, getenv, exists); got != tt.want {
				t.Errorf("configPath(%q) with $%s=%q and %v existing = %q, want %q", tt.flag, envConfig, tt.env, tt.exists, got, tt.want)
			}
		})
	}
}

// cliEnv runs the scheduler once in dir with exactly env as its
// environment.
func cliEnv(t testing.TB, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errb.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run scheduler %v: %v", args, err)
	}
	return out.String(), errb.String(), 0
}

// TestPathsFromEnvironment: with SCHEDULER_CONFIG and SCHEDULER_DB set, as
// the unit sets them, every command finds the config and the database from
// any working directory, -check names the database the daemon opens, and
// the flags still override both.
func TestPathsFromEnvironment(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	confDir, state, elsewhere := filepath.Join(root, "etc"), filepath.Join(root, "state"), filepath.Join(root, "home")
	for _, d := range []string{confDir, state, elsewhere} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config, db := filepath.Join(confDir, "schedules.toml"), filepath.Join(state, "env.db")
	writeFile(t, config, `
[scheduler]
db = "beside-config.db"
[tasks.t]
command = ["true"]
[[schedule]]
name = "s"
cron = "@hourly"
task = "t"
`)
	env := []string{"PATH=" + os.Getenv("PATH"), envConfig + "=" + config, envDB + "=" + db}

	out, errs, code := cliEnv(t, elsewhere, env, "-check")
	if code != 0 || !strings.Contains(out, "database "+db+"\n") {
		t.Fatalf("-check with $%s: exit %d, want 0 naming database %s\nstdout: %s\nstderr: %s", envDB, code, db, out, errs)
	}
	d := startDaemon(t, state, env[1:])
	d.waitLog("db=" + db)
	_, errs, code = cliEnv(t, elsewhere, env, "-trigger", "s")
	if code != 0 {
		t.Fatalf("-trigger: exit %d: %s", code, errs)
	}
	out, errs, code = cliEnv(t, elsewhere, env, "-status")
	if code != 0 || !strings.Contains(out, db) {
		t.Errorf("-status: exit %d, want 0 naming %s\nstdout: %s\nstderr: %s", code, db, out, errs)
	}

	// Without $SCHEDULER_DB the config's db is taken from the config's
	// directory, not the working directory.
	out, _, code = cliEnv(t, elsewhere, env[:2], "-check")
	if want := "database " + filepath.Join(confDir, "beside-config.db") + "\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("-check without $%s: exit %d, want 0 and %q in\n%s", envDB, code, want, out)
	}
	// Flags beat the environment.
	other := filepath.Join(elsewhere, "flag.toml")
	writeFile(t, other, "[scheduler]\ndb = \"/x/flag.db\"\n")
	flagDB := filepath.Join(elsewhere, "flag.db")
	out, _, code = cliEnv(t, elsewhere, env, "-check", "-config", other, "-db", flagDB)
	if code != 0 || !strings.Contains(out, other+": ok") || !strings.Contains(out, "database "+flagDB+"\n") {
		t.Errorf("-check -config -db: exit %d, want the flags' files in\n%s", code, out)
	}
}

// TestCheckReportsCommandsThatCannotStart: -check fails, naming file, line,
// task and field, for a program that is missing, not executable or not in
// PATH; a relative program is looked for beside the config file, as the
// daemon runs it, never in the working directory, and draws no warning.
func TestCheckReportsCommandsThatCannotStart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	confDir, work := filepath.Join(root, "etc"), filepath.Join(root, "work")
	for _, d := range []string{confDir, filepath.Join(confDir, "bin"), work, filepath.Join(work, "bin")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(work, "bin", "ok.sh"), "#!/bin/sh\n")
	writeFile(t, filepath.Join(confDir, "bin", "near.sh"), "#!/bin/sh\n")
	if err := os.WriteFile(filepath.Join(work, "bin", "plain.sh"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(confDir, "schedules.toml")
	writeFile(t, config, `[tasks.missing]
command = ["`+filepath.Join(root, "nope.sh")+`"]

[tasks.plain]
command = ["`+filepath.Join(work, "bin", "plain.sh")+`"]

[tasks.nopath]
command = ["no-such-program-anywhere", "x"]

[tasks.relative]
command = ["./examples/report.sh"]

[tasks.cwd]
command = ["./bin/ok.sh"]

[tasks.near]
command = ["./bin/near.sh"]
`)
	env := []string{"PATH=/usr/bin:/bin", envConfig + "=" + config}
	_, errs, code := cliEnv(t, work, env, "-check")
	if code != 2 {
		t.Errorf("-check: exit %d, want 2", code)
	}
	for _, want := range []string{
		config + `:2: task "missing": field command: program ` + filepath.Join(root, "nope.sh") + ": does not exist",
		config + `:5: task "plain": field command: program ` + filepath.Join(work, "bin", "plain.sh") + ": not executable",
		config + `:8: task "nopath": field command: program "no-such-program-anywhere" not found in PATH "/usr/bin:/bin"`,
		config + `:11: task "relative": field command: program ` + filepath.Join(confDir, "examples", "report.sh") + ": does not exist",
		config + `:14: task "cwd": field command: program ` + filepath.Join(confDir, "bin", "ok.sh") + ": does not exist",
		"5 problems in " + config,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("-check stderr lacks\n%s\nin\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "near") || strings.Contains(errs, "warning") {
		t.Errorf("-check reports the program beside the config, or warns:\n%s", errs)
	}
}

// TestRelativeProgramRunsFromTheConfigDirectory: a command named by a path
// relative to the config file runs wherever the daemon is started, as the
// database beside the config is found: -check passes from another
// directory and the daemon started there runs the program.
func TestRelativeProgramRunsFromTheConfigDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	confDir, work := filepath.Join(root, "etc"), filepath.Join(root, "work")
	for _, d := range []string{confDir, filepath.Join(confDir, "bin"), work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	record := filepath.Join(root, "runs.log")
	writeFile(t, filepath.Join(confDir, "bin", "record.sh"), recorderScript)
	config := filepath.Join(confDir, "schedules.toml")
	writeFile(t, config, `[tasks.rec]
command = ["./bin/record.sh", "`+record+`"]
max_attempts = 1
[[schedule]]
name = "s"
cron = "@yearly"
task = "rec"
`)
	if out, errs, code := cli(t, work, "-check", "-config", config); code != 0 || errs != "" {
		t.Errorf("-check from another directory: exit %d\n%s%s", code, out, errs)
	}
	d := startDaemon(t, work, nil, "-config", config)
	mustCLI(t, work, "-trigger", "s", "-config", config)
	eventually(t, "the job's end", func() bool {
		return strings.Contains(d.log(), `msg="job done"`) || strings.Contains(d.log(), `msg="job dead"`)
	})
	if rs := readRecords(t, record); len(rs) != 1 || !strings.HasPrefix(rs[0].key, "s||manual|") {
		t.Errorf("records %+v, want the manual run of s; daemon log:\n%s", rs, d.log())
	}
}
