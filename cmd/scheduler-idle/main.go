// Command scheduler-idle measures what an idle daemon costs: it starts the
// scheduler binary on a fresh database with a config of many schedules of
// which none is due during the run, waits a warm-up, then reads the
// process's CPU time (utime+stime, /proc/PID/stat) and resident memory
// (VmRSS, /proc/PID/status) at the start and at every sample until the
// duration is over, and prints
//
//	cpu_s=0.31 seconds=600 core_pct=0.052 rss_start_kb=18200 rss_end_kb=18400 rss_max_kb=18500
//
// core_pct is the CPU time over the wall time, in percent of one core.
// It needs Linux (/proc). Without -bin it builds ./cmd/scheduler from the
// working directory (the module's top) first.
//
//	go run ./cmd/scheduler-idle -duration 10m
//
// Like scheduler-bench, it reads the wall clock directly: measuring wall
// time is its purpose.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintf(os.Stderr, "scheduler-idle: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	bin       string
	duration  time.Duration
	warmup    time.Duration
	every     time.Duration
	schedules int
	dir       string
	verbose   bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("scheduler-idle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bin, "bin", "", "scheduler binary to run. Default: go build ./cmd/scheduler into the work directory")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long to measure after the warm-up")
	fs.DurationVar(&o.warmup, "warmup", 10*time.Second, "time after start-up that is not measured")
	fs.DurationVar(&o.every, "every", time.Minute, "sample interval, printed with -v")
	fs.IntVar(&o.schedules, "schedules", 100, "number of schedules, none due during the run")
	fs.StringVar(&o.dir, "dir", "", "work directory for the config, database and log, kept. Default: a temporary directory, removed")
	fs.BoolVar(&o.verbose, "v", false, "print a line per sample")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.duration <= 0 || o.warmup < 0 || o.every <= 0 || o.schedules < 1 {
		return o, errors.New("-duration, -every and -schedules must be positive, -warmup not negative")
	}
	return o, nil
}

// config returns a schedules.toml of n schedules that fire at midnight on
// 1 January, so that none is due while the daemon is measured (unless the
// run spans New Year).
func config(n int) string {
	var b strings.Builder
	b.WriteString("[scheduler]\ndb = \"idle.db\"\n\n[tasks.noop]\ncommand = [\"true\"]\n")
	for i := range n {
		fmt.Fprintf(&b, "\n[[schedule]]\nname = \"s%03d\"\ncron = \"0 0 1 1 *\"\ntask = \"noop\"\n", i)
	}
	return b.String()
}

// sample is one reading of the process.
type sample struct {
	at    time.Time
	cpu   time.Duration // utime+stime
	rssKB int64
}

// clkTck is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on
// every Linux architecture Go supports.
const clkTck = 100

func read(pid int) (sample, error) {
	s := sample{at: time.Now()}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis are fixed: state is field 3, utime 14, stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return s, errors.New("unexpected /proc stat format")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return s, errors.New("unexpected /proc stat format")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return s, fmt.Errorf("parse /proc stat: %w", err)
	}
	s.cpu = time.Duration(ut+st) * time.Second / clkTck
	fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			s.rssKB, err = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return s, err
		}
	}
	return s, errors.New("no VmRSS in /proc status")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	o, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	dir := o.dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "scheduler-idle-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	bin := o.bin
	if bin == "" {
		bin = filepath.Join(dir, "scheduler")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/scheduler")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	cfg := filepath.Join(dir, "schedules.toml")
	for _, f := range []string{"idle.db", "idle.db-wal", "idle.db-shm"} {
		os.Remove(filepath.Join(dir, f))
	}
	if err := os.WriteFile(cfg, []byte(config(o.schedules)), 0o644); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "daemon.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-config", cfg)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	// No systemd watchdog or notify socket from the environment of the
	// measurement: the daemon runs as a plain foreground process.
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "WATCHDOG_USEC=")
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		if werr := <-exited; werr != nil && err == nil {
			err = fmt.Errorf("daemon: %w (log in %s)", werr, logf.Name())
		}
	}()
	wait := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case werr := <-exited:
			exited <- werr
			return fmt.Errorf("daemon exited early: %v", werr)
		case <-time.After(d):
			return nil
		}
	}
	pid := cmd.Process.Pid
	if err := wait(o.warmup); err != nil {
		return err
	}
	first, err := read(pid)
	if err != nil {
		return err
	}
	last, maxRSS := first, first.rssKB
	end := first.at.Add(o.duration)
	for last.at.Before(end) {
		if err := wait(min(o.every, time.Until(end))); err != nil {
			return err
		}
		if last, err = read(pid); err != nil {
			return err
		}
		maxRSS = max(maxRSS, last.rssKB)
		if o.verbose {
			fmt.Fprintf(stdout, "t=%.0fs cpu_s=%.2f rss_kb=%d\n", last.at.Sub(first.at).Seconds(), (last.cpu - first.cpu).Seconds(), last.rssKB)
		}
	}
	cpu, wall := (last.cpu - first.cpu).Seconds(), last.at.Sub(first.at).Seconds()
	fmt.Fprintf(stdout, "schedules=%d seconds=%.0f cpu_s=%.2f core_pct=%.3f rss_start_kb=%d rss_end_kb=%d rss_max_kb=%d\n",
		o.schedules, wall, cpu, 100*cpu/wall, first.rssKB, last.rssKB, maxRSS)
	return nil
}
