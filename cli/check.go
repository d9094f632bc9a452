package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"

	"golang.org/x/sys/unix"

	"scheduler/schedule"
)

// checkCommands reports, for -check, the command tasks whose program the
// daemon could not start from here: the working directory and PATH of this
// process, which under systemd are the unit's (ExecStartPre= runs with
// ExecStart='s settings). Warnings are printed and do not fail the check.
func (a *app) checkCommands() error {
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	errs, warnings := schedule.CheckCommands(a.cfg, schedule.CommandEnv{Dir: wd, Path: getenv("PATH")})
	for _, w := range warnings {
		fmt.Fprintln(a.stderr, "warning:", w)
	}
	if len(errs) > 0 {
		printConfigErrors(a.stderr, errs, "")
		return &usageError{ErrReported}
	}
	return nil
}

// sqliteHeader starts every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// checkDatabase reports, for -check, what would keep the daemon from
// opening a.db, found without writing anything: for a SQLite file, a
// directory that does not exist or that this user cannot create files in
// (the database, its -wal and -shm files and the lock files beside it), a
// file that is not a regular one, that this user cannot read and write, or
// that is not a SQLite database. A PostgreSQL database is not connected
// to.
func (a *app) checkDatabase() error {
	if isDSN(a.db) {
		return nil
	}
	dir := filepath.Dir(a.db)
	who := fmt.Sprintf("uid %d", os.Geteuid())
	if u, err := user.Current(); err == nil {
		who = fmt.Sprintf("user %s (uid %s)", u.Username, u.Uid)
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("database %s: directory %s does not exist: the daemon creates the database, not its directory", a.dbPath, dir)
	case err != nil:
		return fmt.Errorf("database %s: %w", a.dbPath, err)
	case !fi.IsDir():
		return fmt.Errorf("database %s: %s is not a directory", a.dbPath, dir)
	}
	if err := unix.Access(dir, unix.W_OK|unix.X_OK); err != nil {
		return fmt.Errorf("database %s: directory %s is not writable by %s: %w (the daemon creates the database, its -wal and -shm files and its lock files there)", a.dbPath, dir, who, err)
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-gate", "-lock"} {
		path := a.db + suffix
		fi, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("database %s: %w", a.dbPath, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("database %s: %s is not a regular file", a.dbPath, path)
		}
		if err := unix.Access(path, unix.R_OK|unix.W_OK); err != nil {
			return fmt.Errorf("database %s: %s is not readable and writable by %s: %w", a.dbPath, path, who, err)
		}
		if suffix == "" && fi.Size() > 0 {
			if err := checkSQLiteHeader(path); err != nil {
				return fmt.Errorf("database %s: %w", a.dbPath, err)
			}
		}
	}
	return nil
}

// checkSQLiteHeader reports a file that does not start as a SQLite
// database does.
func checkSQLiteHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || string(head) != sqliteHeader {
		return fmt.Errorf("%s is not a SQLite database", path)
	}
	return nil
}
