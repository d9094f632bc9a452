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

// CommandEnv is what the daemon would run commands with: what CheckCommands
// resolves a command's program against.
type CommandEnv struct {
	// Path is the daemon's PATH, searched for a program named without a
	// slash, as exec.LookPath searches it.
	Path string
}

// CheckCommands checks, for every command task of cfg, the program it would
// execute in env: a program that does not exist, is not a regular file or
// is not executable (by this process) is an error, since every job of the
// task would fail at its start; so is a dir that is not a directory. A
// program named by a path is taken from the config file's directory when
// relative (see Task.Command), so its check does not depend on the
// working directory. A program that is a template is not checked.
//
// Unlike Load it reads the file system, so -check calls it and a reload does
// not. Lines are read again from cfg.File; they are 0 if it cannot be read.
func CheckCommands(cfg *Config, env CommandEnv) (errs Errors) {
	var loc *locator
	if data, err := os.ReadFile(cfg.File); err == nil {
		loc = locate(string(data))
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Tasks)) {
		t := cfg.Tasks[name]
		if len(t.Command) == 0 || strings.Contains(t.Command[0], "{{") {
			continue
		}
		problem := func(field string, err error) {
			line := 0
			if loc != nil {
				line = loc.line("tasks", name, field)
			}
			errs = append(errs, &Error{File: cfg.File, Line: line, Table: "task", Job: name, Field: field, Err: err})
		}
		if t.Dir != "" {
			if fi, err := os.Stat(t.Dir); err != nil || !fi.IsDir() {
				problem("dir", fmt.Errorf("working directory %s does not exist or is not a directory", t.Dir))
				continue
			}
		}
		prog := t.Command[0]
		if !strings.Contains(prog, "/") {
			if _, err := lookPath(prog, env.Path); err != nil {
				problem("command", err)
			}
			continue
		}
		if err := executable(prog); err != nil {
			problem("command", fmt.Errorf("program %s: %w", prog, err))
		}
	}
	return errs
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
