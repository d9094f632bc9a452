package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"scheduler/internal/clock"
	"scheduler/schedule"
	"scheduler/tasks"
)

// options are the parsed command line.
type options struct {
	config    string
	db        string
	logFormat string
	logLevel  string

	check    bool
	trigger  string
	payload  string
	key      string
	status   bool
	json     bool
	next     string
	n        int
	pause    string
	resume   string
	skip     bool
	dead     bool
	retry    string
	backfill string
	from     string
	to       string
	job      string
	backup   string
	cancel   int64
	version  bool
	wait     time.Duration // how long an operator's write waits for its turn

	set map[string]bool // flags given explicitly
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", "schedules.toml", "the schedules `file`")
	fs.StringVar(&o.db, "db", "", "the SQLite database `path` (default: [scheduler].db of the config, else scheduler.db)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&o.check, "check", false, "validate the config, print each schedule's next run, and exit; touches no database")
	fs.StringVar(&o.trigger, "trigger", "", "enqueue a run of schedule `NAME` now (one job per fan-out item)")
	fs.StringVar(&o.payload, "payload", "", "with -trigger: a JSON object merged over the schedule's payload")
	fs.StringVar(&o.key, "key", "", "with -trigger: an idempotency key; a trigger with a used key enqueues nothing")
	fs.BoolVar(&o.status, "status", false, "print job counts, the oldest ready job's age, and each schedule's last and next run")
	fs.BoolVar(&o.json, "json", false, "with -status, -dead, -job or -next: print JSON")
	fs.StringVar(&o.next, "next", "", "print the next runs of schedule `NAME`")
	fs.IntVar(&o.n, "n", 5, "with -next: how many runs")
	fs.StringVar(&o.pause, "pause", "", "pause schedule `NAME` (durable; the running daemon stops materialising it)")
	fs.StringVar(&o.resume, "resume", "", "resume schedule `NAME`; missed instants follow its catch_up policy")
	fs.BoolVar(&o.skip, "skip-missed", false, "with -resume: skip every instant missed while paused")
	fs.BoolVar(&o.dead, "dead", false, "list dead jobs")
	fs.StringVar(&o.retry, "retry", "", "make dead job `ID` (or all) pending again with fresh attempts")
	fs.StringVar(&o.backfill, "backfill", "", "enqueue schedule `NAME`'s instants between -from and -to (idempotent)")
	fs.StringVar(&o.from, "from", "", "with -backfill: first instant, RFC 3339")
	fs.StringVar(&o.to, "to", "", "with -backfill: last instant, RFC 3339")
	fs.StringVar(&o.job, "job", "", "show job `ID or KEY` with its attempts and output")
	fs.Int64Var(&o.cancel, "cancel", 0, "cancel pending job `ID`")
	fs.StringVar(&o.backup, "backup", "", "write a consistent copy of the database to `PATH` (VACUUM INTO), safe while the daemon runs")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.DurationVar(&o.wait, "wait", 2*time.Minute, "how long a command's write waits for its turn while the daemon and other commands write; past it, the command fails")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	var modes []string
	for _, m := range []string{"check", "trigger", "status", "next", "pause", "resume", "dead", "retry", "backfill", "job", "backup", "cancel", "version"} {
		if o.set[m] {
			modes = append(modes, "-"+m)
		}
	}
	if len(modes) > 1 {
		return nil, usagef("%s cannot be combined", strings.Join(modes, " and "))
	}
	needs := map[string]string{"payload": "trigger", "key": "trigger", "n": "next", "skip-missed": "resume", "from": "backfill", "to": "backfill"}
	for f, m := range needs {
		if o.set[f] && !o.set[m] {
			return nil, usagef("-%s goes with -%s", f, m)
		}
	}
	if o.set["json"] && !(o.status || o.dead || o.job != "" || o.next != "") {
		return nil, usagef("-json goes with -status, -dead, -job or -next")
	}
	if o.set["backfill"] && (o.from == "" || o.to == "") {
		return nil, usagef("-backfill needs -from and -to")
	}
	if o.wait <= 0 {
		return nil, usagef("-wait must be a positive duration")
	}
	if o.n < 1 || o.n > 1000 {
		return nil, usagef("-n must be between 1 and 1000")
	}
	return o, nil
}

func newLogger(o *options, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usagef("-log-level %q: want debug, info, warn or error", o.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, usagef("-log-format %q: want text or json", o.logFormat)
}

// env is the process environment, read once; tests of run pass their own
// through the environment of a child process.
func getenv(k string) string { return os.Getenv(k) }

// Options are what a program built on Run adds to the scheduler command.
type Options struct {
	// Tasks registers Go task types next to the built-in command and http
	// ones: a [tasks.NAME] table with neither command nor url runs the
	// handler registered under NAME. Nil registers none.
	Tasks func(r *tasks.Registry) error
}

// Run is the scheduler command: args are its flags (without the program
// name), signals carries SIGTERM, SIGINT and SIGHUP for the daemon. It
// returns once the command is done; ExitCode maps its error to the exit
// status. Only main calls os.Exit and signal.Notify.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, signals <-chan os.Signal, opts Options) error {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, "scheduler", version)
		return nil
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	clk, err := programClock(getenv)
	if err != nil {
		return usagef("%v", err)
	}
	a := &app{o: o, stdout: stdout, stderr: stderr, log: log, clock: clk, opts: opts}

	needsConfig := !(o.dead || o.retry != "" || o.job != "" || o.backup != "" || o.cancel != 0 || o.status)
	cfg, cerr := schedule.Load(o.config)
	switch {
	case cerr != nil && (needsConfig || !o.set["db"]):
		printConfigErrors(stderr, cerr)
		return &usageError{ErrReported}
	case cerr == nil:
		a.cfg = cfg
	}
	a.dbPath = databasePath(o, cfg)

	switch {
	case o.check:
		return a.checkConfig()
	case o.trigger != "":
		return a.triggerRun(ctx)
	case o.status:
		return a.showStatus(ctx)
	case o.next != "":
		return a.showNext()
	case o.pause != "":
		return a.setPaused(ctx, o.pause, true)
	case o.resume != "":
		return a.setPaused(ctx, o.resume, false)
	case o.dead:
		return a.listDead(ctx)
	case o.retry != "":
		return a.retryDead(ctx)
	case o.backfill != "":
		return a.backfillRange(ctx)
	case o.job != "":
		return a.showJob(ctx)
	case o.cancel != 0:
		return a.cancelJob(ctx)
	case o.backup != "":
		return a.backupTo(ctx)
	}
	return a.daemon(ctx, signals)
}

// databasePath is -db, else the config's [scheduler].db (relative to the
// config file's directory), else scheduler.db in the working directory.
func databasePath(o *options, cfg *schedule.Config) string {
	if o.db != "" {
		return o.db
	}
	if cfg != nil && cfg.Scheduler.DB != "" {
		if filepath.IsAbs(cfg.Scheduler.DB) {
			return cfg.Scheduler.DB
		}
		return filepath.Join(filepath.Dir(o.config), cfg.Scheduler.DB)
	}
	return schedule.DefaultDB
}

// printConfigErrors prints every problem of a config, one per line.
func printConfigErrors(w io.Writer, err error) {
	if es, ok := errors.AsType[schedule.ConfigErrors](err); ok {
		for _, e := range es {
			fmt.Fprintln(w, e)
		}
		fmt.Fprintf(w, "%d problem(s); nothing was applied\n", len(es))
		return
	}
	fmt.Fprintln(w, err)
}

// app holds what every subcommand needs.
type app struct {
	o      *options
	cfg    *schedule.Config // nil when the subcommand can do without
	dbPath string
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	clock  clock.Clock
	opts   Options
}

// registry returns a task registry with the program's own Go task types.
func (a *app) registry() (*tasks.Registry, error) {
	reg := tasks.NewRegistry(tasks.Config{Logger: a.log, Clock: a.clock})
	if a.opts.Tasks != nil {
		if err := a.opts.Tasks(reg); err != nil {
			return nil, fmt.Errorf("register task types: %w", err)
		}
	}
	return reg, nil
}
