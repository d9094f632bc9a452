package cli

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
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
	discard  string
	backfill string
	from     string
	to       string
	job      string
	backup   string
	cancel   string
	item     string
	version  bool
	hashPass bool
	hashTok  bool
	wait     time.Duration // how long an operator's write waits for its turn
	http     string        // the daemon's metrics listener, over [http] listen

	listOptions // -jobs, -skipped, -alarms and their filters

	ack        string        // -ack ID
	silence    string        // -silence NAME
	unsilence  string        // -unsilence NAME
	silenceFor time.Duration // -for

	set  map[string]bool // flags given explicitly
	mode string          // the mode flag given, without its dash; "" runs the daemon
}

// modeFlags choose what the command does. Being given decides, not the
// value: an empty -trigger "$NAME" is a usage error, not the daemon.
var modeFlags = []string{"check", "trigger", "status", "next", "pause", "resume", "dead", "retry", "discard", "backfill", "job", "backup", "cancel", "version", "jobs", "skipped", "alarms", "hash-password", "hash-token", "ack", "silence", "unsilence"}

// parseFlags parses and checks the command line.
func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.define(fs)
	if err := o.listOptions.parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	if err := o.setGiven(fs); err != nil {
		return nil, err
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	return o, nil
}

// define defines the command's flags on fs.
func (o *options) define(fs *flag.FlagSet) {
	fs.StringVar(&o.config, "config", "", "the schedules `file` (default: $SCHEDULER_CONFIG, else ./schedules.toml, else /etc/scheduler/schedules.toml)")
	fs.StringVar(&o.db, "db", "", "the `path|URL` of the database: a SQLite file, or PostgreSQL as postgres://user:password@host:5432/name (default: $SCHEDULER_DB, else [scheduler].db of the config, a path taken from the config's directory); give a password in $SCHEDULER_DB, not on the command line")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.BoolVar(&o.check, "check", false, "validate the config and what the daemon's start needs (the database's directory and file, the commands' programs), print each schedule's next run, and exit; writes nothing")
	fs.StringVar(&o.trigger, "trigger", "", "enqueue a run of schedule `NAME` now (one job per fan-out item)")
	fs.StringVar(&o.payload, "payload", "", "with -trigger: a `JSON` object merged over the schedule's payload; @FILE reads it from FILE, - from standard input")
	fs.StringVar(&o.key, "key", "", "with -trigger: an idempotency `KEY`; a trigger with a used key enqueues nothing; with -jobs: list the jobs whose key starts with it")
	fs.StringVar(&o.item, "item", "", "with -trigger: run only the fan-out item `ITEM` (its id, like customer=acme, or a value naming one item)")
	fs.BoolVar(&o.status, "status", false, "print job counts, the oldest ready job's age, and each schedule's last and next run")
	fs.BoolVar(&o.json, "json", false, "with "+flagList(jsonCompanion[0].modes)+": print JSON")
	fs.StringVar(&o.next, "next", "", "print the next runs of schedule `NAME`")
	fs.IntVar(&o.n, "n", 5, "with -next: how many runs")
	fs.StringVar(&o.pause, "pause", "", "pause schedule `NAME` (durable; the running daemon stops materialising it)")
	fs.StringVar(&o.resume, "resume", "", "resume schedule `NAME`; missed instants follow its catch_up policy")
	fs.BoolVar(&o.skip, "skip-missed", false, "with -resume: skip every instant missed while paused")
	fs.BoolVar(&o.dead, "dead", false, "list dead jobs, newest first, with their last error")
	fs.StringVar(&o.retry, "retry", "", "make dead or discarded job `ID or KEY` (or all dead ones) pending again with fresh attempts")
	fs.StringVar(&o.discard, "discard", "", "end dead job `ID or KEY` (or all, or with -schedule all of one schedule's) as discarded: kept for the record, no longer counted as dead, never run again unless retried")
	fs.StringVar(&o.backfill, "backfill", "", "enqueue schedule `NAME`'s instants between -from and -to (idempotent)")
	fs.StringVar(&o.from, "from", "", "with -backfill: the first instant `T`, or from the start of a date (2026-11-23) in the schedule's zone; with -next: list runs at or after it (RFC 3339, or 2026-11-01 or 2026-11-01T01:30 in the schedule's zone)")
	fs.StringVar(&o.to, "to", "", "with -backfill: the last instant `T`, or to the end of a date (2026-11-25) in the schedule's zone; RFC 3339 or 2026-11-25T03:00")
	fs.StringVar(&o.job, "job", "", "show job `ID or KEY` with its attempts and output")
	fs.StringVar(&o.cancel, "cancel", "", "cancel pending or running job `ID or KEY` (a running one is stopped by its daemon)")
	fs.StringVar(&o.backup, "backup", "", "write a consistent copy of the SQLite database to `PATH` (VACUUM INTO), safe while the daemon runs; on PostgreSQL use pg_dump")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.hashPass, "hash-password", false, "read a password or token from standard input (without echo from a terminal, else its first line) and print its hash for [http] token_hash or an [[http.user]]'s password_hash")
	fs.BoolVar(&o.hashTok, "hash-token", false, "read an API token (at least 32 random bytes, such as openssl rand -base64 32 prints) from the first line of standard input and print its hash for an [[api.token]]'s hash")
	fs.StringVar(&o.http, "http", "", "the daemon serves the dashboard at /, /metrics and /healthz on `ADDR` (host:port, such as 127.0.0.1:9464), over [http] listen of the config")
	fs.DurationVar(&o.wait, "wait", 2*time.Minute, "how long a command's write waits for its turn while the daemon and other commands write; past it, the command fails")
	fs.StringVar(&o.ack, "ack", "", "acknowledge open incident `ID` (see -status): its reminders stop; who and when are recorded")
	fs.StringVar(&o.silence, "silence", "", "suppress the notifications of schedule `NAME` for -for; its incidents are still recorded and counted")
	fs.DurationVar(&o.silenceFor, "for", 0, "with -silence: how long, such as 2h")
	fs.StringVar(&o.unsilence, "unsilence", "", "lift the silence of schedule `NAME`")
	o.listOptions.define(fs)
}

// setGiven records the flags given and their mode. An empty value, or two
// modes, is a usage error.
func (o *options) setGiven(fs *flag.FlagSet) error {
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
		return usagef("-%s: empty %s", name, what)
	}
	var modes []string
	for _, m := range modeFlags {
		if o.set[m] {
			modes = append(modes, "-"+m)
			o.mode = m
		}
	}
	if len(modes) > 1 {
		return usagef("%s cannot be combined", strings.Join(modes, " and "))
	}
	return nil
}

// validate rejects a flag without its mode, and a value out of range.
func (o *options) validate() error {
	if err := checkCompanions(o.set, modeCompanions); err != nil {
		return err
	}
	if err := o.listOptions.check(o.set); err != nil {
		return err
	}
	if err := checkCompanions(o.set, jsonCompanion); err != nil {
		return err
	}
	if o.set["silence"] && (!o.set["for"] || o.silenceFor <= 0) {
		return usagef("-silence needs -for with a positive duration, such as -for 2h (-unsilence NAME lifts a silence)")
	}
	if o.set["backfill"] && (!o.set["from"] || !o.set["to"]) {
		return usagef("-backfill needs -from and -to")
	}
	if o.set["http"] {
		if o.mode != "" {
			return usagef("-http goes with the daemon, not -%s", o.mode)
		}
		if _, err := config.CheckListen(o.http); err != nil {
			return usagef("-http: %v", err)
		}
	}
	if o.wait <= 0 {
		return usagef("-wait must be a positive duration")
	}
	if err := checkJobRef("cancel", o.cancel); err != nil {
		return err
	}
	if err := checkJobRef("retry", o.retry); err != nil {
		return err
	}
	if err := checkJobRef("discard", o.discard); err != nil {
		return err
	}
	if o.set["discard"] && o.set["schedule"] && o.discard != "all" {
		return usagef("-schedule goes with -discard all, not with one job (-discard %s)", o.discard)
	}
	if o.n < 1 || o.n > schedule.MaxNextN {
		return usagef("-n must be between 1 and %d", schedule.MaxNextN)
	}
	return nil
}

// companion is a flag that refines some modes and needs one of them.
type companion struct {
	flag  string
	modes []string
}

// modeCompanions are the flags that refine one mode or two.
var modeCompanions = []companion{
	{"payload", []string{"trigger"}},
	{"item", []string{"trigger"}},
	{"n", []string{"next"}},
	{"skip-missed", []string{"resume"}},
	{"for", []string{"silence"}},
	{"to", []string{"backfill"}},
	{"from", []string{"backfill", "next"}},
}

// listCompanions are the filters of the listings, and -key.
var listCompanions = []companion{
	{"state", []string{"jobs"}},
	{"task", []string{"jobs"}},
	{"schedule", []string{"jobs", "skipped", "alarms", "discard"}},
	{"limit", []string{"jobs", "skipped", "alarms"}},
	{"key", []string{"trigger", "jobs"}},
}

// jsonCompanion is -json, with the modes that print JSON.
var jsonCompanion = []companion{
	{"json", []string{"status", "dead", "job", "next", "jobs", "skipped", "alarms", "ack", "silence", "unsilence"}},
}

// checkCompanions reports the first of cs given without any of its modes.
func checkCompanions(set map[string]bool, cs []companion) error {
	for _, c := range cs {
		if set[c.flag] && !slices.ContainsFunc(c.modes, func(m string) bool { return set[m] }) {
			return usagef("-%s goes with %s", c.flag, flagList(c.modes))
		}
	}
	return nil
}

// flagList is names as flags: "-a", "-a or -b", or "-a, -b or -c".
func flagList(names []string) string {
	flags := make([]string, len(names))
	for i, n := range names {
		flags[i] = "-" + n
	}
	if len(flags) == 1 {
		return flags[0]
	}
	return strings.Join(flags[:len(flags)-1], ", ") + " or " + flags[len(flags)-1]
}

// listOptions are the flags of -jobs and -skipped.
type listOptions struct {
	jobs     bool
	skipped  bool
	alarms   bool
	skipName string // -skipped NAME: the schedule, given after the flag
	state    string
	task     string
	sched    string
	limit    int
}

// defaultListLimit is how many rows -jobs and -skipped print without -limit.
const defaultListLimit = 50

// define defines the flags of the listings on fs.
func (l *listOptions) define(fs *flag.FlagSet) {
	fs.BoolVar(&l.jobs, "jobs", false, "list jobs, newest first; narrow with -state, -task, -schedule and -key")
	fs.BoolVar(&l.skipped, "skipped", false, "list skipped runs, newest instant first: of every schedule, or of the schedule NAME given after it")
	fs.StringVar(&l.state, "state", "", "with -jobs: only jobs in `STATE` ("+stateList()+")")
	fs.StringVar(&l.task, "task", "", "with -jobs: only jobs of task `NAME`")
	fs.BoolVar(&l.alarms, "alarms", false, "list alarms (late, missed, dead, misfire, upstream, recovered), newest first; narrow with -schedule")
	fs.StringVar(&l.sched, "schedule", "", "with -jobs, -skipped, -alarms or -discard all: only runs of schedule `NAME`")
	fs.IntVar(&l.limit, "limit", defaultListLimit, "with -jobs, -skipped or -alarms: print at most `N` rows (1 to 1000)")
}

// parse parses args into fs, taking a word after -skipped as the
// schedule's name: "-skipped nightly -json".
func (l *listOptions) parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if l.skipped && fs.NArg() > 0 && l.skipName == "" {
		l.skipName = fs.Arg(0)
		return fs.Parse(fs.Args()[1:])
	}
	return nil
}

// check rejects a filter without its listing, and a value out of range.
func (l *listOptions) check(set map[string]bool) error {
	if err := checkCompanions(set, listCompanions); err != nil {
		return err
	}
	if l.limit < 1 || l.limit > queue.MaxList {
		return usagef("-limit %d: want 1 to %d", l.limit, queue.MaxList)
	}
	if l.state != "" && !slices.Contains(jobStates, queue.State(l.state)) {
		return usagef("-state %q: want %s", l.state, stateList())
	}
	if l.skipName != "" && l.sched != "" && l.skipName != l.sched {
		return usagef("-skipped %s and -schedule %s name different schedules", l.skipName, l.sched)
	}
	if l.skipName != "" {
		l.sched = l.skipName
	}
	return nil
}

// stateList is the job states in words: "pending, ..., dead or discarded".
func stateList() string {
	names := make([]string, len(jobStates))
	for i, s := range jobStates {
		names[i] = string(s)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// newLogger returns the logger -log-format and -log-level ask for.
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

// durationText renders durations as "30s" in both formats: JSON would
// write nanoseconds, a different unit from the config's.
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
