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

// CommandEnv is the environment CheckCommands resolves programs in.
type CommandEnv struct {
	// Path is the daemon's PATH, searched as exec.LookPath does.
	Path string
}

// CheckCommands reports each command task of cfg whose program, in env,
// is missing, not a regular file or not executable by this process, or
// whose dir is not a directory: every job of it would fail at its start.
// A templated program is not checked.
//
// Unlike Load it reads the file system, so -check calls it and a reload
// does not. Lines come from re-reading cfg.File; 0 if it cannot be read.
func CheckCommands(cfg *Config, env CommandEnv) (errs Errors) {
	var loc *locator // located at the first problem
	located := false
	for _, name := range slices.Sorted(maps.Keys(cfg.Tasks)) {
		t := cfg.Tasks[name]
		if len(t.Command) == 0 || strings.Contains(t.Command[0], "{{") {
			continue
		}
		problem := func(field string, err error) {
			if !located {
				located = true
				if data, err := os.ReadFile(cfg.File); err == nil {
					loc = locate(string(data))
				}
			}
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

// lookPath finds prog in path as exec.LookPath does in $PATH, refusing
// relative elements as exec does.
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
