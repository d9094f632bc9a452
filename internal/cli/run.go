package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/tasks"
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
	cancel   string
	item     string
	version  bool
	hashPass bool
	wait     time.Duration // how long an operator's write waits for its turn
	http     string        // the daemon's metrics listener, over [http] listen

	listOptions // -jobs, -skipped, -alarms and their filters (see jobs.go)

	set  map[string]bool // flags given explicitly
	mode string          // the mode flag given, without its dash; "" runs the daemon
}

// modeFlags are the flags that choose what the command does. Which of them
// was given decides, never its value: an empty -trigger "$NAME" is a usage
// error, not the daemon.
var modeFlags = []string{"check", "trigger", "status", "next", "pause", "resume", "dead", "retry", "backfill", "job", "backup", "cancel", "version", "jobs", "skipped", "alarms", "hash-password"}

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.config, "config", "", "the schedules `file` (default: $SCHEDULER_CONFIG, else ./schedules.toml, else /etc/scheduler/schedules.toml)")
	fs.StringVar(&o.db, "db", "", "the `path|URL` of the database: a SQLite file, or PostgreSQL as postgres://user:password@host:5432/name (default: $SCHEDULER_DB, else [scheduler].db of the config, a path taken from the config's directory); give a password in $SCHEDULER_DB, not on the command line")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&o.check, "check", false, "validate the config and what the daemon's start needs (the database's directory and file, the commands' programs), print each schedule's next run, and exit; writes nothing")
	fs.StringVar(&o.trigger, "trigger", "", "enqueue a run of schedule `NAME` now (one job per fan-out item)")
	fs.StringVar(&o.payload, "payload", "", "with -trigger: a JSON object merged over the schedule's payload; @FILE reads it from FILE, - from standard input")
	fs.StringVar(&o.key, "key", "", "with -trigger: an idempotency key; a trigger with a used key enqueues nothing; with -jobs: list the jobs whose key starts with it")
	fs.StringVar(&o.item, "item", "", "with -trigger: run only the fan-out item `ITEM` (its id, like customer=acme, or a value naming one item)")
	fs.BoolVar(&o.status, "status", false, "print job counts, the oldest ready job's age, and each schedule's last and next run")
	fs.BoolVar(&o.json, "json", false, "with -status, -dead, -job or -next: print JSON")
	fs.StringVar(&o.next, "next", "", "print the next runs of schedule `NAME`")
	fs.IntVar(&o.n, "n", 5, "with -next: how many runs")
	fs.StringVar(&o.pause, "pause", "", "pause schedule `NAME` (durable; the running daemon stops materialising it)")
	fs.StringVar(&o.resume, "resume", "", "resume schedule `NAME`; missed instants follow its catch_up policy")
	fs.BoolVar(&o.skip, "skip-missed", false, "with -resume: skip every instant missed while paused")
	fs.BoolVar(&o.dead, "dead", false, "list dead jobs")
	fs.StringVar(&o.retry, "retry", "", "make dead job `ID or KEY` (or all) pending again with fresh attempts")
	fs.StringVar(&o.backfill, "backfill", "", "enqueue schedule `NAME`'s instants between -from and -to (idempotent)")
	fs.StringVar(&o.from, "from", "", "with -backfill: first instant, or from the start of a date (2026-11-23) in the schedule's zone; with -next: list runs at or after it (RFC 3339, or 2026-11-01 or 2026-11-01T01:30 in the schedule's zone)")
	fs.StringVar(&o.to, "to", "", "with -backfill: last instant, or to the end of a date (2026-11-25) in the schedule's zone; RFC 3339 or 2026-11-25T03:00")
	fs.StringVar(&o.job, "job", "", "show job `ID or KEY` with its attempts and output")
	fs.StringVar(&o.cancel, "cancel", "", "cancel pending or running job `ID or KEY` (a running one is stopped by its daemon)")
	fs.StringVar(&o.backup, "backup", "", "write a consistent copy of the SQLite database to `PATH` (VACUUM INTO), safe while the daemon runs; on PostgreSQL use pg_dump")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.hashPass, "hash-password", false, "read a password or token from standard input (without echo from a terminal, else its first line) and print its hash for [http] token_hash or an [[http.user]]'s password_hash")
	fs.StringVar(&o.http, "http", "", "the daemon serves the dashboard at /, /metrics and /healthz on `ADDR` (host:port, such as 127.0.0.1:9464), over [http] listen of the config")
	fs.DurationVar(&o.wait, "wait", 2*time.Minute, "how long a command's write waits for its turn while the daemon and other commands write; past it, the command fails")
	o.listOptions.define(fs)
	if err := o.listOptions.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	o.set = map[string]bool{}
	var empty []string
	fs.Visit(func(f *flag.Flag) {
		o.set[f.Name] = true
		if g, ok := f.Value.(flag.Getter); ok && g.Get() == "" {
			empty = append(empty, f.Name)
		}
	})
	for _, name := range empty {
		what, _ := flag.UnquoteUsage(fs.Lookup(name))
		if what == "string" {
			what = "value"
		}
		return nil, usagef("-%s: empty %s", name, what)
	}
	var modes []string
	for _, m := range modeFlags {
		if o.set[m] {
			modes = append(modes, "-"+m)
			o.mode = m
		}
	}
	if len(modes) > 1 {
		return nil, usagef("%s cannot be combined", strings.Join(modes, " and "))
	}
	needs := map[string]string{"payload": "trigger", "item": "trigger", "n": "next", "skip-missed": "resume", "to": "backfill"}
	for f, m := range needs {
		if o.set[f] && !o.set[m] {
			return nil, usagef("-%s goes with -%s", f, m)
		}
	}
	if o.set["from"] && !o.set["backfill"] && !o.set["next"] {
		return nil, usagef("-from goes with -backfill or -next")
	}
	if err := o.listOptions.check(o.set); err != nil {
		return nil, err
	}
	if o.set["json"] && !(o.set["status"] || o.set["dead"] || o.set["job"] || o.set["next"] || o.set["jobs"] || o.set["skipped"] || o.set["alarms"]) {
		return nil, usagef("-json goes with -status, -dead, -job, -next, -jobs, -skipped or -alarms")
	}
	if o.set["backfill"] && (!o.set["from"] || !o.set["to"]) {
		return nil, usagef("-backfill needs -from and -to")
	}
	if o.set["http"] {
		if o.mode != "" {
			return nil, usagef("-http goes with the daemon, not -%s", o.mode)
		}
		if _, err := schedule.CheckListen(o.http); err != nil {
			return nil, usagef("-http: %v", err)
		}
	}
	if o.wait <= 0 {
		return nil, usagef("-wait must be a positive duration")
	}
	if err := checkJobRef("cancel", o.cancel); err != nil {
		return nil, err
	}
	if err := checkJobRef("retry", o.retry); err != nil {
		return nil, err
	}
	if o.n < 1 || o.n > schedule.MaxNextN {
		return nil, usagef("-n must be between 1 and %d", schedule.MaxNextN)
	}
	return o, nil
}

func newLogger(o *options, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, usagef("-log-level %q: want debug, info, warn or error", o.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: durationText}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, usagef("-log-format %q: want text or json", o.logFormat)
}

// durationText renders every time.Duration attribute as its String form
// ("30s", "1.5ms") in both formats: the JSON handler would write
// nanoseconds, which read as a different unit from the config's "30s".
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
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
	// Version is what -version prints. Empty derives it from the build
	// information the go command stamps into the binary.
	Version string
	// Stdin is what -hash-password reads the password from. Nil: os.Stdin.
	Stdin io.Reader
}

// Run is the scheduler command: args are its flags (without the program
// name), signals carries SIGTERM, SIGINT and SIGHUP. The daemon stops on
// SIGTERM and SIGINT and reloads on SIGHUP; an operator command stops at the
// first of the three and returns an error for which ExitCode is
// ExitInterrupted. Run returns once the command is done; ExitCode maps its
// error to the exit status. Only main calls os.Exit and signal.Notify.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, signals <-chan os.Signal, opts Options) error {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.version {
		info, ok := debug.ReadBuildInfo()
		fmt.Fprintln(stdout, "scheduler", buildVersion(opts.Version, info, ok))
		return nil
	}
	if o.hashPass {
		in := opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		return hashPassword(in, stdout, stderr)
	}
	log, err := newLogger(o, stderr)
	if err != nil {
		return err
	}
	clk, err := programClock(getenv)
	if err != nil {
		return usagef("%v", err)
	}
	if o.mode != "" && !o.json {
		// Text for a person: stored output and errors must not drive the
		// terminal. JSON escapes control characters itself.
		ew := newEscapeWriter(stdout)
		defer ew.Flush()
		stdout = ew
	}
	a := &app{o: o, stdout: stdout, stderr: stderr, log: log, clock: clk, opts: opts}
	flagConfig := o.config
	o.config = configPath(o.config, getenv, fileExists)
	cfg, data, cerr := readConfig(o.config)
	if errors.Is(cerr, fs.ErrNotExist) {
		cerr = &configNotFoundError{looked: configCandidates(flagConfig, getenv), err: cerr}
	}
	a.db = databasePath(o.db, getenv, o.config, cfg)
	if cerr != nil && data != nil && o.db == "" && getenv(envDB) == "" {
		// A broken file whose db line still reads names the database.
		if db, ok := schedule.RecoverDB(data); ok {
			a.db, a.dbRecovered = databasePathOf("", getenv, o.config, db), true
		}
	}
	a.dbPath = redactDSN(a.db)
	if o.db == "" {
		// From here on o.db says whether the database was named outside
		// the file (lastgood.go, splitScheduler).
		o.db = getenv(envDB)
	}
	switch {
	case cerr == nil:
		a.cfg, a.cfgData = cfg, data
	case operatorCommand(o):
		// A broken file: work from the config the daemon runs (lastgood.go).
		if err := a.useLastGood(ctx, cerr); err != nil {
			return err
		}
	default:
		printConfigErrors(stderr, cerr, configOutcome(o))
		return &usageError{ErrReported}
	}

	if o.mode == "" {
		return redactErr(a.daemon(ctx, signals), a.db)
	}
	ctx, stop := commandContext(ctx, signals)
	defer stop()
	// Whatever error comes back is printed: no password in it.
	err = redactErr(a.command(ctx), a.db)
	if sig, ok := context.Cause(ctx).(interruption); ok && err != nil {
		return &interruptedError{mode: o.mode, sig: sig.sig, err: err}
	}
	return err
}

// command runs the operator command o.mode.
func (a *app) command(ctx context.Context) error {
	o := a.o
	switch o.mode {
	case "check":
		return a.checkConfig()
	case "trigger":
		return a.triggerRun(ctx)
	case "status":
		return a.showStatus(ctx)
	case "next":
		return a.showNext(ctx)
	case "pause":
		return a.setPaused(ctx, o.pause, true)
	case "resume":
		return a.setPaused(ctx, o.resume, false)
	case "dead":
		return a.listDead(ctx)
	case "retry":
		return a.retryDead(ctx)
	case "backfill":
		return a.backfillRange(ctx)
	case "job":
		return a.showJob(ctx)
	case "cancel":
		return a.cancelJob(ctx)
	case "backup":
		return a.backupTo(ctx)
	case "jobs":
		return a.listJobs(ctx)
	case "skipped":
		return a.listSkipped(ctx)
	case "alarms":
		return a.listAlarms(ctx)
	}
	return fmt.Errorf("mode -%s has no command", o.mode)
}

// interruption is the cause of an operator command's cancelled context.
type interruption struct{ sig os.Signal }

func (i interruption) Error() string { return "interrupted by " + signalName(i.sig) }

// commandContext returns ctx cancelled, with an interruption as its cause,
// when the first signal arrives: SIGINT and SIGTERM, and SIGHUP, whose
// default (ending the process when its terminal goes) main's handler would
// otherwise swallow. stop releases the goroutine that waits for it.
func commandContext(ctx context.Context, signals <-chan os.Signal) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case sig := <-signals:
			cancel(interruption{sig})
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		wg.Wait()
		cancel(nil)
	}
}

// interruptedError is an operator command cut short by a signal. What it
// had not committed is not done; every command is safe to run again.
type interruptedError struct {
	mode string
	sig  os.Signal
	err  error
}

func (e *interruptedError) Error() string {
	return fmt.Sprintf("-%s interrupted by %s before it finished: %v", e.mode, signalName(e.sig), e.err)
}

func (e *interruptedError) Unwrap() error { return e.err }

func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name := unix.SignalName(s); name != "" {
			return name
		}
	}
	return sig.String()
}

// buildVersion is what -version prints: override when set (main's version,
// from -ldflags "-X main.version=v1.2.3"), else the main module's version
// that the go command stamped into the binary (a release tag, or a
// pseudo-version of the commit with "+dirty" for uncommitted changes), else
// the commit from the build's VCS settings, else "dev".
func buildVersion(override string, info *debug.BuildInfo, ok bool) string {
	if override != "" {
		return override
	}
	if !ok || info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, at string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	v := "dev-" + rev[:min(12, len(rev))]
	if dirty {
		v += "-dirty"
	}
	if at != "" {
		v += " (" + at + ")"
	}
	return v
}

// printConfigErrors prints every problem of a config, one per line, then
// their count followed by outcome (see configOutcome).
func printConfigErrors(w io.Writer, err error, outcome string) {
	if es, ok := errors.AsType[schedule.ConfigErrors](err); ok {
		for _, e := range es {
			fmt.Fprintln(w, e)
		}
		fmt.Fprintln(w, problemCount(es)+outcome)
		return
	}
	fmt.Fprintln(w, err)
}

// app holds what every subcommand needs.
type app struct {
	o   *options
	cfg *schedule.Config // nil when the subcommand can do without
	// db is the database, a file's path or a PostgreSQL URL, to open it
	// with (openDatabase); dbPath names it in messages and logs: the path,
	// or the URL without its password (redactDSN). Nothing else shows db.
	db     string
	dbPath string
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	clock  clock.Clock
	opts   Options

	// Where cfg came from (lastgood.go): the file's bytes, nil when it did
	// not load; why it did not; the daemon's stored config when cfg is it.
	cfgData []byte
	fileErr error
	running *store.StoredConfig
	// dbRecovered is set when db is the [scheduler].db of a file that does
	// not load (schedule.RecoverDB).
	dbRecovered bool

	// met holds the daemon's metrics while it serves them; nil otherwise.
	met *metrics
	// process is what the daemon's pools' rows say of it, with the config
	// it runs (daemon and reload only).
	process queue.Process
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
