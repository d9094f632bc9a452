package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckCommands: -check's look at each command's program and dir, with
// file, line, task and field, whatever the working directory.
func TestCheckCommands(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	confDir := filepath.Join(root, "etc")
	binDir := filepath.Join(root, "bin")
	for _, d := range []string{confDir, binDir, filepath.Join(confDir, "scripts")} {
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
	write(filepath.Join(confDir, "scripts", "job.sh"), 0o755)
	abs := filepath.Join(binDir, "tool")
	path := "/nonexistent:" + binDir

	tests := []struct {
		name    string
		command string
		taskDir string
		wantErr string // substring of the one error; "" for none
	}{
		{name: "absolute", command: abs},
		{name: "bare name in PATH", command: "tool"},
		{name: "template program", command: "{{.prog}}"},
		{name: "absolute missing", command: filepath.Join(binDir, "missing"), wantErr: "does not exist"},
		{name: "absolute not executable", command: filepath.Join(binDir, "plain"), wantErr: "not executable"},
		{name: "absolute directory", command: binDir, wantErr: "not a regular file"},
		{name: "bare name missing", command: "no-such-tool", wantErr: `"no-such-tool" not found in PATH`},
		{name: "bare name not executable", command: "plain", wantErr: "not executable"},
		{name: "relative, beside the config", command: "./scripts/job.sh"},
		{name: "relative, up from the config", command: "../bin/tool"},
		{name: "relative missing beside the config", command: "./scripts/other.sh",
			wantErr: "program " + filepath.Join(confDir, "scripts", "other.sh") + ": does not exist"},
		{name: "relative, with a task dir: still from the config's directory", command: "./job.sh", taskDir: filepath.Join(confDir, "scripts"),
			wantErr: "program " + filepath.Join(confDir, "job.sh") + ": does not exist"},
		{name: "relative task dir, from the config's directory", command: abs, taskDir: "scripts"},
		{name: "task dir missing", command: abs, taskDir: filepath.Join(root, "gone"), wantErr: "working directory " + filepath.Join(root, "gone")},
		{name: "relative task dir missing", command: abs, taskDir: "gone", wantErr: "working directory " + filepath.Join(confDir, "gone")},
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
			errs := CheckCommands(cfg, CommandEnv{Path: path})
			if tt.wantErr == "" {
				if len(errs) != 0 {
					t.Errorf("CheckCommands = %v, want none", errs)
				}
				return
			}
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.wantErr) {
				t.Fatalf("CheckCommands = %v, want one containing %q", errs, tt.wantErr)
			}
			e := errs[0]
			wantLine, wantField := 2, "command"
			if strings.Contains(tt.wantErr, "working directory") {
				wantLine, wantField = 3, "dir"
			}
			if e.File != file || e.Line != wantLine || e.Job != "t" || e.Field != wantField {
				t.Errorf("CheckCommands at %s:%d task %q field %q, want %s:%d task \"t\" field %q",
					e.File, e.Line, e.Job, e.Field, file, wantLine, wantField)
			}
		})
	}
}

// TestLoadTakesRelativePathsFromTheFile: a command's program named by a
// relative path, and a relative dir, are made absolute from the config
// file's directory, as its db is; a bare name is left for PATH, and a
// program that starts with a template or an absolute path as written.
func TestLoadTakesRelativePathsFromTheFile(t *testing.T) {
	t.Parallel()
	const file = "/srv/conf/schedules.toml"
	tests := []struct {
		name, program, dir   string
		wantProgram, wantDir string
	}{
		{"dot slash", "./report.sh", "", "/srv/conf/report.sh", ""},
		{"subdirectory", "bin/report.sh", "", "/srv/conf/bin/report.sh", ""},
		{"parent", "../libexec/report.sh", "", "/srv/libexec/report.sh", ""},
		{"absolute", "/usr/bin/env", "", "/usr/bin/env", ""},
		{"bare name", "df", "", "df", ""},
		{"template", "{{.prog}}", "", "{{.prog}}", ""},
		{"template after a directory", "{{.dir}}/run", "", "{{.dir}}/run", ""},
		{"relative then template", "./bin/{{.tool}}", "", "/srv/conf/./bin/{{.tool}}", ""},
		{"relative dir", "df", "work", "df", "/srv/conf/work"},
		{"absolute dir", "./report.sh", "/var/lib/scheduler", "/srv/conf/report.sh", "/var/lib/scheduler"},
	}
	for _, tt := range tests {
		text := "[tasks.t]\ncommand = [" + quote(tt.program) + "]\n"
		if tt.dir != "" {
			text += "dir = " + quote(tt.dir) + "\n"
		}
		cfg, err := Parse(file, []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		task := cfg.Tasks["t"]
		if task.Command[0] != tt.wantProgram || task.Dir != tt.wantDir {
			t.Errorf("%s: program %q, dir %q; want %q, %q", tt.name, task.Command[0], task.Dir, tt.wantProgram, tt.wantDir)
		}
	}
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }
