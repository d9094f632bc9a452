package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckCommands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	confDir := filepath.Join(root, "etc")
	workDir := filepath.Join(root, "work")
	binDir := filepath.Join(root, "bin")
	for _, d := range []string{confDir, workDir, binDir, filepath.Join(workDir, "scripts"), filepath.Join(confDir, "scripts")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(binDir, "tool"), 0o755)
	write(filepath.Join(binDir, "plain"), 0o644)
	write(filepath.Join(workDir, "scripts", "job.sh"), 0o755)
	write(filepath.Join(confDir, "scripts", "job.sh"), 0o755)
	abs := filepath.Join(binDir, "tool")
	path := "/nonexistent:" + binDir

	tests := []struct {
		name     string
		command  string
		dir      string // the daemon's working directory; default workDir
		taskDir  string
		wantErr  string // substring of the one error; "" for none
		wantWarn string
	}{
		{name: "absolute", command: abs},
		{name: "bare name in PATH", command: "tool"},
		{name: "template program", command: "{{.prog}}"},
		{name: "absolute missing", command: filepath.Join(binDir, "missing"), wantErr: "does not exist"},
		{name: "absolute not executable", command: filepath.Join(binDir, "plain"), wantErr: "not executable"},
		{name: "absolute directory", command: binDir, wantErr: "not a regular file"},
		{name: "bare name missing", command: "no-such-tool", wantErr: `"no-such-tool" not found in PATH`},
		{name: "bare name not executable", command: "plain", wantErr: "not executable"},
		{name: "relative, daemon in the config's directory", command: "./scripts/job.sh", dir: confDir},
		{name: "relative, daemon elsewhere", command: "./scripts/job.sh", wantWarn: "relative to the working directory " + workDir},
		{name: "relative missing", command: "./scripts/other.sh", wantErr: "relative to the working directory " + workDir + ": does not exist"},
		{name: "relative to the task's dir", command: "./job.sh", taskDir: filepath.Join(confDir, "scripts")},
		{name: "task dir missing", command: abs, taskDir: filepath.Join(root, "gone"), wantErr: "working directory " + filepath.Join(root, "gone")},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := "[tasks.t]\ncommand = [" + quote(tt.command) + ", \"x\"]\n"
			if tt.taskDir != "" {
				text += "dir = " + quote(tt.taskDir) + "\n"
			}
			text += "\n[[schedule]]\nname = \"s\"\ncron = \"@hourly\"\ntask = \"t\"\npayload = { prog = \"tool\" }\n"
			file := filepath.Join(confDir, "c"+strings.Repeat("x", i)+".toml")
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			dir := tt.dir
			if dir == "" {
				dir = workDir
			}
			errs, warns := CheckCommands(cfg, CommandEnv{Dir: dir, Path: path})
			check := func(kind string, got Errors, want string) {
				t.Helper()
				if want == "" {
					if len(got) != 0 {
						t.Errorf("CheckCommands %s = %v, want none", kind, got)
					}
					return
				}
				if len(got) != 1 || !strings.Contains(got[0].Error(), want) {
					t.Fatalf("CheckCommands %s = %v, want one containing %q", kind, got, want)
				}
				e := got[0]
				wantLine, wantField := 2, "command"
				if tt.taskDir != "" && strings.Contains(want, "working directory "+tt.taskDir) {
					wantLine, wantField = 3, "dir"
				}
				if e.File != file || e.Line != wantLine || e.Job != "t" || e.Field != wantField {
					t.Errorf("CheckCommands %s at %s:%d task %q field %q, want %s:%d task \"t\" field %q",
						kind, e.File, e.Line, e.Job, e.Field, file, wantLine, wantField)
				}
			}
			check("errors", errs, tt.wantErr)
			check("warnings", warns, tt.wantWarn)
		})
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
