package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/schedule/config"
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
	errs, warnings := config.CheckCommands(a.cfg, config.CommandEnv{Dir: wd, Path: getenv("PATH")})
	for _, w := range warnings {
		fmt.Fprintln(a.stderr, "warning:", w)
	}
	if len(errs) > 0 {
		printConfigErrors(a.stderr, errs, "")
		return &usageError{ErrReported}
	}
	return nil
}

// printHTTP says, for -check, what the [http] listener serves and to whom:
// the listen address, the dashboard's login and actions, the host names it
// answers to and the proxies whose X-Forwarded-For it reads; nothing when
// [http] sets none of them.
func printHTTP(out io.Writer, h config.HTTPSettings) {
	if h.Listen == "" && len(h.Hosts) == 0 && len(h.TrustedProxies) == 0 {
		return
	}
	listen := h.Listen
	if listen == "" {
		listen = "none (-http sets one)"
	}
	dash := "off"
	if h.Dashboard {
		var who []string
		if !h.TokenHash.IsZero() {
			who = append(who, config.TokenUser)
		}
		for _, u := range h.Users {
			who = append(who, u.Name)
		}
		dash = "read without login"
		if len(who) > 0 {
			dash = "login as " + strings.Join(who, ", ")
		}
		if h.Actions {
			dash += ", actions on"
		}
	}
	fmt.Fprintf(out, "http listen: %s; dashboard: %s\n", listen, dash)
	if h.Dashboard {
		hosts := []string{"localhost", "IP addresses"}
		if host, _, err := net.SplitHostPort(h.Listen); err == nil && host != "" && host != "localhost" && net.ParseIP(host) == nil {
			hosts = append(hosts, host)
		}
		fmt.Fprintf(out, "http hosts: %s\n", strings.Join(append(hosts, h.Hosts...), ", "))
	}
	if len(h.TrustedProxies) > 0 {
		ps := make([]string, len(h.TrustedProxies))
		for i, p := range h.TrustedProxies {
			ps[i] = p.String()
			if p.IsSingleIP() {
				ps[i] = p.Addr().String()
			}
		}
		fmt.Fprintf(out, "http trusted proxies: %s (the client is read from X-Forwarded-For or Forwarded)\n", strings.Join(ps, ", "))
	}
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
