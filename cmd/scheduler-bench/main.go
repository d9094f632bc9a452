// Command scheduler-bench measures the queue package on the peerbench
// workload: one producer enqueues no-op jobs one per transaction, a
// queue.Pool drains them, and a latency run feeds an idle pool one job every
// 10 ms. It prints peerbench's result lines with system=scheduler, so that
//
//	SELF_CMD=/path/to/scheduler-bench ./run.sh
//
// in the peerbench directory runs it next to the other systems and puts its
// rows in the same median table. With -dsn it runs on PostgreSQL and prints
// system=scheduler-pg, as peerbench's SELF_PG_CMD expects:
//
//	PG_DSN=postgres://... SELF_PG_CMD=/path/to/scheduler-bench ./run.sh
//
// It drives only the exported queue API (Open, Enqueue, EnqueueBatch, NewPool,
// Register, Run, Stats). On PostgreSQL it runs SQL of its own only to create
// and drop a schema per configuration (see pgSchemas) and to read back the
// server's synchronous_commit. Every enqueue is durable when it returns:
// fsynced on SQLite, and on PostgreSQL as the server's synchronous_commit
// says (on by default: every commit waits for the WAL flush).
// Its latency runs are cfg=default (enqueued through the pool's own
// store), othernode (through a second store in this process) and
// otherproc (from a second process, this program run with -produce): the
// last two wake the pool by LISTEN/NOTIFY, as a job from another node does.
//
// -mode nodes drains -jobs jobs with one node, then with -nodes nodes (each
// a queue.Client with a pool of -workers workers, in this process) on one
// database, and prints the ratio (x_nodes1=).
//
// Unlike the daemon, this program reads the wall clock directly: measuring
// wall time is its purpose.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: usage is printed
		}
		fmt.Fprintf(os.Stderr, "scheduler-bench: %v\n", err)
		os.Exit(1)
	}
}

// options are the parsed command-line flags.
type options struct {
	mode       string
	jobs       int
	workers    int
	latJobs    int
	latEvery   time.Duration
	warmup     time.Duration
	stall      time.Duration
	rep        int
	db         string
	dsn        string // a PostgreSQL URL; "" runs on SQLite files
	nodes      int    // -mode nodes: the number of nodes of the second run
	produce    bool   // be the producer process of cfg=otherproc
	extra      bool   // the enqueue lines of the other configurations
	latOther   bool   // the latency run cfg=otherconn
	cpuProfile string
	profPhase  string
}

const (
	modeThroughput = "throughput"
	modeLatency    = "latency"
	modeNodes      = "nodes"
)

// Values of -profphase.
const (
	profAll     = "all"
	profEnqueue = "enqueue"
	profDrain   = "drain"
	profLatency = "latency"
)

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("scheduler-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mode, "mode", modeThroughput, "throughput (enqueue+drain), latency, or nodes (drain -jobs jobs with one node, then with -nodes nodes on one database)")
	fs.BoolVar(&o.produce, "produce", false, "internal: be the producer process of the latency run cfg=otherproc (with -dsn, -latjobs, -latevery)")
	fs.IntVar(&o.nodes, "nodes", 3, "nodes: the number of nodes (each a queue.Client with a pool of -workers workers) of the second drain")
	fs.IntVar(&o.jobs, "jobs", 20000, "throughput: number of jobs")
	fs.IntVar(&o.workers, "workers", 8, "queue.PoolConfig.Workers")
	fs.IntVar(&o.latJobs, "latjobs", 2000, "latency: number of jobs to enqueue")
	fs.DurationVar(&o.latEvery, "latevery", 10*time.Millisecond, "latency: enqueue interval")
	fs.DurationVar(&o.warmup, "warmup", 1500*time.Millisecond, "latency: idle time after starting the pool before the first enqueue")
	fs.DurationVar(&o.stall, "stall", 60*time.Second, "give up (and report lost jobs) after this long without progress")
	fs.IntVar(&o.rep, "rep", 0, "repetition number, echoed as rep=")
	fs.StringVar(&o.db, "db", "", "database file for cfg=default, deleted first (with its -wal and -shm) and kept afterwards; the other configurations use PATH.batch100, PATH.otherconn and PATH.producers8. Default: files in a temporary directory, removed afterwards")
	fs.StringVar(&o.dsn, "dsn", "", "run on PostgreSQL: the database's URL (postgres://user:password@host:5432/name?sslmode=disable), as peerbench's PG_DSN; the lines say system=scheduler-pg. Not with -db")
	fs.BoolVar(&o.extra, "extra", true, "throughput: also print enqueue lines for cfg=batch100 (EnqueueBatch of 100) and cfg=producers8 (Enqueue from 8 goroutines at once)")
	fs.BoolVar(&o.latOther, "latother", true, "latency: also run cfg=otherconn, whose jobs come from a second queue on the file (SQLite)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile to this file")
	fs.StringVar(&o.profPhase, "profphase", "", "what -cpuprofile covers: enqueue, drain or latency (of cfg=default), or all. Default: drain in throughput mode, latency in latency mode, all in nodes mode")
	// peerbench flags that choose among its systems or tune their knobs.
	// They have no meaning here; they are accepted so that a command line
	// written for peerbench runs unchanged.
	var system string
	fs.StringVar(&system, "system", "", "ignored unless set to something other than scheduler (peerbench compatibility)")
	fs.Duration("poll", 0, "ignored (peerbench compatibility)")
	fs.Duration("cooldown", 0, "ignored (peerbench compatibility)")
	fs.Duration("rawsecs", 0, "ignored (peerbench compatibility)")
	fs.String("baseline", "", "ignored (peerbench compatibility)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.dsn != "" {
		if o.db != "" {
			return o, errors.New("-db and -dsn cannot be combined: -db names SQLite files, -dsn a PostgreSQL database")
		}
		if !isDSN(o.dsn) {
			return o, fmt.Errorf("-dsn %s: want a URL, postgres://user:password@host:5432/name (the keyword=value form is not read)", redactDSN(o.dsn))
		}
	}
	if system != "" && system != systemName && system != o.system() {
		return o, fmt.Errorf("-system %q: this program only runs %s", system, o.system())
	}
	if o.mode != modeThroughput && o.mode != modeLatency && o.mode != modeNodes {
		return o, fmt.Errorf("unknown -mode %q (want %s, %s or %s)", o.mode, modeThroughput, modeLatency, modeNodes)
	}
	if o.jobs <= 0 || o.workers <= 0 || o.latJobs <= 0 || o.nodes <= 0 {
		return o, errors.New("-jobs, -workers, -latjobs and -nodes must be positive")
	}
	if o.latEvery < 0 || o.warmup < 0 || o.stall <= 0 {
		return o, errors.New("-latevery and -warmup must not be negative, -stall must be positive")
	}
	switch o.profPhase {
	case "":
		switch o.mode {
		case modeLatency:
			o.profPhase = profLatency
		case modeNodes:
			o.profPhase = profAll
		default:
			o.profPhase = profDrain
		}
	case profAll:
	case profEnqueue, profDrain:
		if o.mode != modeThroughput {
			return o, fmt.Errorf("-profphase %s needs -mode %s", o.profPhase, modeThroughput)
		}
	case profLatency:
		if o.mode != modeLatency {
			return o, fmt.Errorf("-profphase %s needs -mode %s", o.profPhase, modeLatency)
		}
	default:
		return o, fmt.Errorf("unknown -profphase %q", o.profPhase)
	}
	return o, nil
}

// system is the system= of the result lines: peerbench keeps PostgreSQL rows
// apart by a name that ends in -pg.
func (o options) system() string {
	if o.dsn != "" {
		return systemName + "-pg"
	}
	return systemName
}

// run parses args, runs the benchmark and writes result lines to stdout and
// diagnostics to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.produce {
		if o.dsn == "" {
			return errors.New("-produce needs -dsn")
		}
		return produce(ctx, o, stdout)
	}
	b := &bench{o: o, stdout: stdout, stderr: stderr}
	if o.dsn != "" {
		b.schemas = newPGSchemas(o.dsn)
	} else {
		files, cleanup, err := prepareFiles(o.db)
		if err != nil {
			return fmt.Errorf("db path: %w", err)
		}
		defer cleanup()
		b.files = files
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return fmt.Errorf("cpuprofile: %w", err)
		}
		defer func() {
			b.stopProfile()
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("cpuprofile: %w", cerr)
			}
		}()
		b.prof = f
		if o.profPhase == profAll {
			if err := b.startProfile(profAll); err != nil {
				return err
			}
		}
	}
	switch o.mode {
	case modeThroughput:
		return b.throughput(ctx)
	case modeNodes:
		return b.nodes(ctx)
	default:
		return b.latency(ctx)
	}
}

// dbFiles maps a configuration label to the database file it runs on. Each
// configuration gets a fresh file, so one run's rows never slow another's.
type dbFiles func(cfg string) string

// prepareFiles returns where each configuration's database goes and a
// function that removes what must not outlive the run. With an explicit path,
// cfg=default uses it and the others PATH.<cfg>; files left by an earlier run
// are deleted now, and the new ones are kept for inspection.
func prepareFiles(db string) (dbFiles, func(), error) {
	if db == "" {
		dir, err := os.MkdirTemp("", "scheduler-bench-")
		if err != nil {
			return nil, nil, err
		}
		files := func(cfg string) string { return filepath.Join(dir, cfgFileName(cfg)+".db") }
		return files, func() { os.RemoveAll(dir) }, nil
	}
	files := func(cfg string) string {
		if cfg == cfgDefault {
			return db
		}
		return db + "." + cfgFileName(cfg)
	}
	for _, cfg := range allCfgs {
		if err := removeDB(files(cfg)); err != nil {
			return nil, nil, err
		}
	}
	return files, func() {}, nil
}

// cfgFileName turns a cfg label into a file name part: a comma becomes a
// dash.
func cfgFileName(cfg string) string { return strings.ReplaceAll(cfg, ",", "-") }

// removeDB deletes a database file and its WAL and shared-memory files.
func removeDB(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (b *bench) startProfile(phase string) error {
	if b.prof == nil || b.o.profPhase != phase || b.profiling {
		return nil
	}
	if err := pprof.StartCPUProfile(b.prof); err != nil {
		return fmt.Errorf("cpuprofile: %w", err)
	}
	b.profiling = true
	return nil
}

func (b *bench) stopProfile() {
	if b.profiling {
		pprof.StopCPUProfile()
		b.profiling = false
	}
}
