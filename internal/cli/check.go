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
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/scheduler-run/scheduler/internal/daemon"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
	"golang.org/x/sys/unix"
)

// checkConfig is -check: it checks the config, task types, programs,
// environment and database as the daemon's start would, writing nothing,
// then prints each schedule's next run and what the config sets up.
func (a *app) checkConfig() error {
	reg, err := daemon.NewRegistry(a.opts.Tasks, a.clock, a.log)
	if err != nil {
		return err
	}
	if err := daemon.CheckTasks(reg, a.cfg); err != nil {
		printConfigErrors(a.stderr, err, "")
		return &usageError{ErrReported}
	}
	for _, e := range a.cfg.Warnings {
		fmt.Fprintln(a.stderr, "warning:", e)
	}
	if err := a.checkCommands(); err != nil {
		return err
	}
	if err := daemon.CheckEnv(getenv); err != nil {
		return usagef("%v", err)
	}
	if err := a.checkDatabase(); err != nil {
		return usagef("%v", err)
	}
	now := a.clock.Now()
	if err := printScheduleTable(a.stdout, a.cfg.Schedules, now); err != nil {
		return err
	}
	printBudgets(a.stdout, a.cfg)
	printRedaction(a.stdout, a.cfg)
	printPools(a.stdout, a.cfg)
	printHTTP(a.stdout, a.cfg.HTTP)
	fmt.Fprintf(a.stdout, "%s: ok, %s, %s, database %s\n", a.o.config,
		plural(len(a.cfg.Schedules), "schedule"), plural(len(a.cfg.Tasks), "task"), a.dbPath)
	return nil
}

// configOutcome ends the summary of a bad config's problems.
func configOutcome(o *options) string {
	if o.mode == "check" {
		return ""
	}
	return "; nothing was done"
}

// problemCount says "2 problems in schedules.toml", or "more than" for a
// list cut short at config.MaxErrors.
func problemCount(es config.Errors) string {
	n, more := len(es), ""
	for _, e := range es {
		if errors.Is(e, config.ErrTooManyProblems) {
			n--
			more = "more than "
		}
	}
	file := ""
	if len(es) > 0 && es[0].File != "" {
		file = " in " + es[0].File
	}
	return more + plural(n, "problem") + file
}

// checkCommands reports the command tasks whose program the daemon could
// not start. A bare name is looked up in this process's PATH, which under
// systemd is the unit's (ExecStartPre= runs with ExecStart='s settings).
func (a *app) checkCommands() error {
	if errs := config.CheckCommands(a.cfg, config.CommandEnv{Path: getenv("PATH")}); len(errs) > 0 {
		printConfigErrors(a.stderr, errs, "")
		return &usageError{ErrReported}
	}
	return nil
}

// checkDatabase reports, writing nothing, what would keep the daemon from
// opening a SQLite file: a missing or unwritable directory, or a file that
// is not regular, not readable and writable, or not SQLite. It does not
// connect to PostgreSQL.
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
	for _, suffix := range databaseFiles {
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

// databaseFiles are the suffixes of a SQLite database's files: the
// database, its WAL and shared memory, and the write turn's two locks.
var databaseFiles = []string{"", "-wal", "-shm", "-gate", "-lock"}

// sqliteHeader starts every SQLite database file.
const sqliteHeader = "SQLite format 3\x00"

// checkSQLiteHeader reports a file that does not start with sqliteHeader.
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

// printBudgets lists the tasks with resource limits, a give_up_after or a
// rate limit, and what an attempt over a limit becomes.
func printBudgets(out io.Writer, cfg *config.Config) {
	var rows [][4]string
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		limits := daemon.TaskLimits(t)
		if limits.IsZero() && t.GiveUpAfter == 0 && t.Rate == 0 {
			continue
		}
		row := [4]string{name, "-", "-", "-"}
		if !limits.IsZero() {
			row[1] = limits.String()
			if limits.MemoryMax > 0 || limits.CPUTimeMax > 0 {
				if limits.Retryable {
					row[1] += " (retried when exceeded)"
				} else {
					row[1] += " (permanent when exceeded)"
				}
			}
		}
		if t.GiveUpAfter > 0 {
			row[2] = queue.ShortDuration(t.GiveUpAfter)
		}
		if t.Rate > 0 {
			row[3] = fmt.Sprintf("%d/%s", t.Rate, queue.ShortDuration(t.RatePer))
			if t.RateKey != "" {
				row[3] += " per " + t.RateKey
			}
			if t.RateBurst > 1 {
				row[3] += fmt.Sprintf(", burst %d", t.RateBurst)
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "TASK\tLIMITS\tGIVE UP AFTER\tRATE\n")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r[0], r[1], r[2], r[3])
	}
	w.Flush()
}

// printRedaction lists the tasks that mask secrets, and what they mask.
func printRedaction(out io.Writer, cfg *config.Config) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := false
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		if len(t.Redact) == 0 && len(t.RedactOutput) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "TASK\tREDACTED FIELDS\tREDACTED OUTPUT\n")
			header = true
		}
		patterns := make([]string, len(t.RedactOutput))
		for i, p := range t.RedactOutput {
			patterns[i] = strconv.Quote(p)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", name, orDash(strings.Join(t.Redact, ", ")), orDash(strings.Join(patterns, ", ")))
	}
	w.Flush()
}

// printPools lists each worker pool's workers and tasks when the config
// has [pools.NAME] tables; the default pool has the tasks of no table.
func printPools(out io.Writer, cfg *config.Config) {
	if len(cfg.Pools) == 0 {
		return
	}
	var rest []string
	for _, name := range taskNames(cfg) {
		if cfg.PoolOf(name) == config.DefaultPool {
			rest = append(rest, name)
		}
	}
	workers := cfg.Scheduler.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0) // the pool's default
	}
	list := func(ts []string) string {
		if len(ts) == 0 {
			return "-"
		}
		return strings.Join(ts, ", ")
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "POOL\tWORKERS\tTASKS\n")
	fmt.Fprintf(w, "%s\t%d\t%s\n", config.DefaultPool, workers, list(rest))
	for _, p := range cfg.Pools {
		fmt.Fprintf(w, "%s\t%d\t%s\n", p.Name, p.Workers, list(p.Tasks))
	}
	w.Flush()
}

// printHTTP says what the [http] listener serves and to whom.
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
