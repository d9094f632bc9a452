package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// CommandEnv is where the daemon would run commands: what CheckCommands
// resolves a command's program against.
type CommandEnv struct {
	// Dir is the daemon's working directory, absolute. A task without dir
	// runs there, and a relative dir or program is taken from it.
	Dir string
	// Path is the daemon's PATH, searched for a program named without a
	// slash, as exec.LookPath searches it.
	Path string
}

// CheckCommands checks, for every command task of cfg, the program it would
// execute in env: a program that does not exist, is not a regular file or
// is not executable (by this process) is an error, since every job of the
// task would fail at its start. A program named by a path relative to the
// working directory, while that directory is not the config file's, is a
// warning: the config then works only from one directory, and the
// daemon's (under systemd, its WorkingDirectory=) may not be the one it
// was written for. A program that is a template is not checked.
//
// Unlike Load it reads the file system, so -check calls it and a reload does
// not. Lines are read again from cfg.File; they are 0 if it cannot be read.
func CheckCommands(cfg *Config, env CommandEnv) (errs, warnings Errors) {
	var loc *locator
	if data, err := os.ReadFile(cfg.File); err == nil {
		loc = locate(string(data))
	}
	configDir := ""
	if abs, err := filepath.Abs(filepath.Dir(cfg.File)); err == nil {
		configDir = abs
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Tasks)) {
		t := cfg.Tasks[name]
		if len(t.Command) == 0 || strings.Contains(t.Command[0], "{{") {
			continue
		}
		field, path := "command", []string{"tasks", name, "command"}
		dir := env.Dir
		if t.Dir != "" {
			dir = t.Dir
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(env.Dir, dir)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				field, path = "dir", []string{"tasks", name, "dir"}
			}
		}
		problem := func(list *Errors, err error) {
			line := 0
			if loc != nil {
				line = loc.line(path...)
			}
			*list = append(*list, &Error{File: cfg.File, Line: line, Table: "task", Job: name, Field: field, Err: err})
		}
		if field == "dir" {
			problem(&errs, fmt.Errorf("working directory %s does not exist or is not a directory", dir))
			continue
		}
		prog := t.Command[0]
		switch {
		case !strings.Contains(prog, "/"):
			if _, err := lookPath(prog, env.Path); err != nil {
				problem(&errs, err)
			}
		case filepath.IsAbs(prog):
			if err := executable(prog); err != nil {
				problem(&errs, fmt.Errorf("program %s: %w", prog, err))
			}
		default:
			full := filepath.Join(dir, prog)
			if err := executable(full); err != nil {
				problem(&errs, fmt.Errorf("program %s, relative to the working directory %s: %w; give an absolute path", prog, dir, err))
				continue
			}
			if t.Dir == "" && configDir != "" && configDir != filepath.Clean(env.Dir) {
				problem(&warnings, fmt.Errorf("program %s is found relative to the working directory %s, not to the config's directory %s; it breaks when the daemon runs elsewhere: give an absolute path", prog, env.Dir, configDir))
			}
		}
	}
	return errs, warnings
}

// lookPath finds prog in path as exec.LookPath does in $PATH: an empty
// element is the working directory (exec refuses such a result, and so
// does this).
func lookPath(prog, path string) (string, error) {
	var lastErr error
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		full := filepath.Join(dir, prog)
		err := executable(full)
		if err == nil {
			return full, nil
		}
		if !errors.Is(err, errNoFile) {
			lastErr = fmt.Errorf("program %s: %w", full, err)
		}
	}
	if lastErr != nil {
		return "", lastErr
	}
	return "", fmt.Errorf("program %q not found in PATH %q", prog, path)
}

// errNoFile is a program that is not there.
var errNoFile = errors.New("does not exist")

// executable returns nil if path is a regular file this process may
// execute.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errNoFile
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not executable (mode %s)", fi.Mode().Perm())
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return fmt.Errorf("not executable by this user: %w", err)
	}
	return nil
}
