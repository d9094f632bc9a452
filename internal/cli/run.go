package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/tasks"
	"golang.org/x/sys/unix"
)

// Options are what a program built on Run adds to the scheduler command.
type Options struct {
	// Tasks registers Go task types beside command and http: a
	// [tasks.NAME] table with neither command nor url runs the handler
	// registered under NAME. Nil registers none.
	Tasks func(r *tasks.Registry) error
	// Version is what -version prints. Empty derives it from the build.
	Version string
	// Stdin is what -hash-password, -hash-token and -payload - read. Nil: os.Stdin.
	Stdin io.Reader
}

// Run is the scheduler command; args are its flags without the program
// name. signals carries SIGTERM, SIGINT and SIGHUP: the daemon stops on
// the first two and reloads on SIGHUP; an operator command stops on any,
// with ExitInterrupted. ExitCode maps Run's error to the exit status.
// Only main calls os.Exit and signal.Notify.
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
	if o.hashPass || o.hashTok {
		in := opts.Stdin
		if in == nil {
			in = os.Stdin
		}
		if o.hashTok {
			return hashToken(in, stdout)
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
		// Stored output must not drive the terminal; JSON escapes itself.
		ew := newEscapeWriter(stdout)
		defer ew.Flush()
		stdout = ew
	}
	a := &app{o: o, stdout: stdout, stderr: stderr, log: log, clock: clk, opts: opts}
	if err := a.loadConfig(ctx); err != nil {
		return err
	}
	if o.mode == "" {
		return redactErr(a.runDaemon(ctx, signals), a.db)
	}
	ctx, stop := commandContext(ctx, signals)
	defer stop()
	// The error is printed: no password in it.
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
	case "discard":
		return a.discardDead(ctx)
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
	case "ack":
		return a.ackIncident(ctx)
	case "silence":
		return a.silenceSchedule(ctx, o.silence, o.silenceFor)
	case "unsilence":
		return a.silenceSchedule(ctx, o.unsilence, 0)
	}
	return fmt.Errorf("mode -%s has no command", o.mode)
}

// interruption is the cause of an operator command's cancelled context.
type interruption struct{ sig os.Signal }

func (i interruption) Error() string { return "interrupted by " + signalName(i.sig) }

// commandContext returns ctx cancelled by the first signal, its cause an
// interruption. SIGHUP counts: main's handler swallows its default of
// ending the process when the terminal goes. stop ends the waiting
// goroutine.
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

// signalName is sig as the shell names it, such as SIGTERM.
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if name := unix.SignalName(s); name != "" {
			return name
		}
	}
	return sig.String()
}

// printConfigErrors prints a config's problems, then their count and outcome.
func printConfigErrors(w io.Writer, err error, outcome string) {
	if es, ok := errors.AsType[config.Errors](err); ok {
		for _, e := range es {
			fmt.Fprintln(w, e)
		}
		fmt.Fprintln(w, problemCount(es)+outcome)
		return
	}
	fmt.Fprintln(w, err)
}

// buildVersion is what -version prints: override when set, else the main
// module's stamped version (a tag, or a pseudo-version with "+dirty"),
// else the VCS commit, else "dev".
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

// programVersion is the version the daemon records in its pool's row.
func (a *app) programVersion() string {
	info, ok := debug.ReadBuildInfo()
	return buildVersion(a.opts.Version, info, ok)
}

// getenv reads the process environment; tests set a child's.
func getenv(k string) string { return os.Getenv(k) }
