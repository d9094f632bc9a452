package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/template"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// DefaultKillGrace is the default CommandConfig.KillGrace.
const DefaultKillGrace = 10 * time.Second

// errorOutput is how many bytes of output a failed command's error quotes.
const errorOutput = 1 << 10

// outputDrain bounds reading the output once every process the command
// started is gone: only a process it was handed to can hold it open.
const outputDrain = 2 * time.Second

// inheritedEnv lists the only variables a command takes from the daemon.
var inheritedEnv = []string{"PATH", "HOME", "LANG", envTZ}

// envTZ is the daemon's zone, or the schedule's (CommandConfig.Zones).
const envTZ = "TZ"

// Variables that describe the job to every command; Env cannot set them.
const (
	envPrefix      = "SCHEDULER_"
	envJobID       = "SCHEDULER_JOB_ID"
	envKey         = "SCHEDULER_KEY"
	envAttempt     = "SCHEDULER_ATTEMPT"
	envSchedule    = "SCHEDULER_SCHEDULE"
	envScheduledAt = "SCHEDULER_SCHEDULED_AT"
	envTraceparent = "TRACEPARENT" // the W3C trace context of the attempt's span
	envTracestate  = "TRACESTATE"
)

// CommandConfig configures a Command. Zero values select the defaults shown.
type CommandConfig struct {
	// Argv is the program and its arguments; required. Argv[0] is a path
	// or a name looked up in PATH. Each element is a text/template over
	// the payload as a JSON object (numbers keep their text; null counts
	// as missing); a missing key fails the job permanently. Each result is
	// exactly one argument: there is no shell.
	Argv []string
	// Env is added over what the command inherits (PATH, HOME, LANG, TZ).
	// Names starting with SCHEDULER_ are reserved.
	Env map[string]string
	// Dir is the command's working directory. Default: the daemon's.
	Dir string
	// Zones maps schedule names to IANA zones: their jobs get TZ set, so
	// date(1) prints the schedule's wall clock. A TZ in Env wins. The
	// Command keeps the map, which every task of a config shares, so the
	// caller must not modify it afterwards.
	Zones map[string]string
	// PermanentExitCodes (1-255) fail the job permanently.
	PermanentExitCodes []int
	// KillGrace separates SIGTERM and SIGKILL at the job's end. Default: 10s.
	KillGrace time.Duration
	// Clock times KillGrace and the output drain. Default: clock.Real{}.
	Clock clock.Clock
	// Logger receives process life-cycle events. Default: discard.
	Logger *slog.Logger
	// Groups, if set, tracks the command while it runs.
	Groups *ProcessGroups
	// Limits are set in the command's process before the program runs.
	Limits Limits
	// Launcher is the supervisor's binary. Default: the running binary.
	Launcher string
}

// Command is a queue.Handler that runs a program for each job. It is safe
// for concurrent use.
//
// The program gets the payload as JSON on stdin, the environment of
// CommandConfig, and SCHEDULER_JOB_ID, SCHEDULER_KEY, SCHEDULER_ATTEMPT,
// SCHEDULER_SCHEDULE and SCHEDULER_SCHEDULED_AT (RFC 3339 UTC, empty for
// no instant); when the attempt is traced, TRACEPARENT (and TRACESTATE)
// name its span. It runs in a new process group under a supervisor (see
// RunSubprocess). When the job's context is done, the group and every
// descendant get SIGTERM and, KillGrace later, SIGKILL; what is left when
// the program exits, or when the daemon dies, is killed at once. The last
// queue.MaxOutput bytes of stdout and stderr become the job's output.
//
// Exit code 0 is success. An exit code in PermanentExitCodes, arguments
// the payload cannot fill, or a program that cannot start fail the job
// permanently; any other exit, a signal or the context's end is an
// ordinary failed attempt.
//
// With Limits, a failure put down to a limit reads "memory limit 512MiB
// exceeded" or "cpu time limit 10m exceeded", then the exit, and is
// permanent unless Limits.Retryable or PermanentExitCodes says otherwise.
type Command struct {
	argv      []string
	tmpls     []*template.Template
	env       map[string]string
	zones     map[string]string
	dir       string
	permanent map[int]bool
	killGrace time.Duration
	clock     clock.Clock
	log       *slog.Logger
	groups    *ProcessGroups
	limits    Limits
	launcher  string
}

// NewCommand checks cfg, parses its argument templates and returns a Command.
func NewCommand(cfg CommandConfig) (*Command, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("command is empty")
	}
	if cfg.Argv[0] == "" {
		return nil, errors.New("command program name is empty")
	}
	c := &Command{
		argv:      slices.Clone(cfg.Argv),
		tmpls:     make([]*template.Template, len(cfg.Argv)),
		env:       maps.Clone(cfg.Env),
		zones:     cfg.Zones, // one per schedule: not copied for each task
		dir:       cfg.Dir,
		permanent: make(map[int]bool, len(cfg.PermanentExitCodes)),
		killGrace: cfg.KillGrace,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		groups:    cfg.Groups,
		limits:    cfg.Limits,
		launcher:  cfg.Launcher,
	}
	if l := cfg.Limits; l.MemoryMax < 0 || l.CPUTimeMax < 0 || l.OpenFilesMax < 0 {
		return nil, fmt.Errorf("limits %+v: negative", l)
	}
	if c.launcher == "" {
		launcher, err := DefaultLauncher()
		if err != nil {
			return nil, fmt.Errorf("command supervisor: find the running binary: %w", err)
		}
		c.launcher = launcher
	}
	for i, arg := range cfg.Argv {
		t, err := template.New(argName(i)).Option("missingkey=error").Parse(arg)
		if err != nil {
			return nil, fmt.Errorf("command argument %d %q: %w", i, arg, err)
		}
		c.tmpls[i] = t
	}
	for k, v := range cfg.Env {
		if err := checkEnv(k, v); err != nil {
			return nil, err
		}
	}
	for _, code := range cfg.PermanentExitCodes {
		if code < 1 || code > 255 {
			return nil, fmt.Errorf("permanent exit code %d is not in 1-255", code)
		}
		c.permanent[code] = true
	}
	switch {
	case c.killGrace < 0:
		return nil, fmt.Errorf("kill grace %s is negative", c.killGrace)
	case c.killGrace == 0:
		c.killGrace = DefaultKillGrace
	}
	if c.clock == nil {
		c.clock = clock.Real{}
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With(logKeyComponent, "command")
	return c, nil
}

func argName(i int) string { return "argv[" + strconv.Itoa(i) + "]" }

func checkEnv(k, v string) error {
	switch {
	case k == "":
		return errors.New("environment variable name is empty")
	case strings.ContainsAny(k, "=\x00"):
		return fmt.Errorf("environment variable name %q contains '=' or NUL", k)
	case strings.HasPrefix(k, envPrefix):
		return fmt.Errorf("environment variable %s: names starting with %s are reserved", k, envPrefix)
	case strings.ContainsRune(v, 0):
		return fmt.Errorf("environment variable %s: value contains NUL", k)
	}
	return nil
}

// Args returns the argument vector c would run for payload (empty means
// {}), so a loader can check templates against an example. The error
// names the argument and any missing key.
func (c *Command) Args(payload json.RawMessage) ([]string, error) {
	data, err := decodePayload(payload)
	if err != nil {
		return nil, err
	}
	args := make([]string, len(c.tmpls))
	for i, t := range c.tmpls {
		var b strings.Builder
		if err := t.Execute(&b, data); err != nil {
			return nil, fmt.Errorf("expand command argument %d %q: %w", i, c.argv[i], explainKey(t, payload, err))
		}
		args[i] = b.String()
	}
	if args[0] == "" {
		return nil, fmt.Errorf("expand command argument 0 %q: program name is empty", c.argv[0])
	}
	return args, nil
}

// decodePayload decodes a JSON object for the argument templates.
func decodePayload(payload json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(payload)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	// Numbers keep their text: a large ID must not become 1.2e+19.
	dec.UseNumber()
	var data map[string]any
	if err := dec.Decode(&data); err != nil {
		return nil, fmt.Errorf("decode payload as a json object: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode payload as a json object: data after the object")
	}
	if data == nil {
		data = map[string]any{}
	}
	dropNulls(data)
	return data, nil
}

// dropNulls deletes null values at every depth, so that missingkey=error
// rejects them instead of printing "<no value>".
func dropNulls(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if e == nil {
				delete(v, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range v {
			dropNulls(e)
		}
	}
}

// Work runs the command for job and records its output.
func (c *Command) Work(ctx context.Context, job *queue.Job) error {
	out, err := c.run(ctx, job)
	job.SetOutput(out)
	return err
}

func (c *Command) run(ctx context.Context, job *queue.Job) ([]byte, error) {
	args, err := c.Args(job.Payload)
	if err != nil {
		return nil, queue.Permanent(err)
	}
	name := args[0]
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("command %s not started: %w", name, err)
	}
	stdin := []byte(job.Payload)
	if len(bytes.TrimSpace(stdin)) == 0 {
		stdin = []byte("{}")
	}
	path, err := programPath(name)
	if err != nil {
		return nil, startError(name, err)
	}
	start := c.clock.Monotonic()
	sv, inW, outR, err := c.startSupervised(name, path, args, c.environ(ctx, job))
	if err != nil {
		return nil, err
	}
	defer sv.close()
	c.groups.add(sv.pid(), sv.lifeline)
	defer c.groups.remove(sv.pid())
	pid, launchErr := sv.started(name, c.limits)
	log := c.log.With(logKeyJobID, job.ID, logKeyJobType, job.Type, logKeyAttempt, job.Attempt, logKeyPID, pid)
	log.DebugContext(ctx, "command started")
	out, res := c.communicate(ctx, log, sv, stdin, inW, outR)
	log.DebugContext(ctx, "command exited", logKeyDuration, c.clock.Monotonic()-start, logKeyErr, res.err)
	if launchErr != nil {
		return out, launchErr
	}
	return out, c.exitError(ctx, name, res, out)
}

// startSupervised starts the program under its supervisor and returns the
// writer of its stdin and the reader of its output. The pipes are ours:
// exec's copying would make Wait hang while any process holds stdout.
func (c *Command) startSupervised(name, path string, args []string, env []string) (sv *supervisor, inW, outR *os.File, err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("command %s: create stdin pipe: %w", name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, nil, fmt.Errorf("command %s: create output pipe: %w", name, err)
	}
	sv, startErr := startSupervisor(c.launcher, path, args, c.limits, env, c.dir, inR, outW)
	inR.Close()
	outW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		return nil, nil, nil, startError(name, startErr)
	}
	return sv, inW, outR, nil
}

// communicate feeds stdin and reads the output's tail until the program
// exits or await stops it, and returns both. It closes inW and outR.
func (c *Command) communicate(ctx context.Context, log *slog.Logger, sv *supervisor, stdin []byte, inW, outR *os.File) ([]byte, programExit) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		// EPIPE when the program exits without reading is not an error.
		_, _ = inW.Write(stdin)
		inW.Close()
	})
	tail := newTailBuffer(queue.MaxOutput)
	readDone := make(chan struct{})
	wg.Go(func() {
		defer close(readDone)
		// Read errors, the drain's close included, only end the output,
		// which the job's page shows as it grows.
		_, _ = io.Copy(io.MultiWriter(tail, queue.OutputWriter(ctx)), outR)
	})
	exited := make(chan programExit, 1)
	wg.Go(func() { exited <- sv.wait() })
	res := c.await(ctx, log, sv, exited)
	// Every process the command started is gone with the supervisor.
	inW.Close()
	select {
	case <-readDone:
	case <-c.clock.After(outputDrain):
		log.WarnContext(ctx, "command output held open by a process it did not start")
	}
	outR.Close()
	<-readDone
	return tail.Bytes(), res
}

// await waits for the program, stopping it when ctx ends (see KillGrace).
func (c *Command) await(ctx context.Context, log *slog.Logger, sv *supervisor, exited <-chan programExit) programExit {
	select {
	case res := <-exited:
		return res
	case <-ctx.Done():
	}
	log.InfoContext(ctx, "command stopping", logKeySignal, "SIGTERM", logKeyErr, context.Cause(ctx))
	c.signal(ctx, log, sv, syscall.SIGTERM)
	select {
	case res := <-exited:
		return res
	case <-c.clock.After(c.killGrace):
		log.WarnContext(ctx, "command killed after grace", logKeySignal, "SIGKILL", logKeyGrace, c.killGrace)
		sv.kill()
		return <-exited
	}
}

// programPath is name if it holds a slash, else exec.LookPath's answer.
func programPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	return exec.LookPath(name)
}

// signal sends sig through the supervisor. A failure is logged: the
// command's own result still decides the job's fate.
func (c *Command) signal(ctx context.Context, log *slog.Logger, sv *supervisor, sig syscall.Signal) {
	if err := sv.signal(sig); err != nil {
		log.ErrorContext(ctx, "signal command supervisor failed", logKeySignal, unix.SignalName(sig), logKeyErr, err)
	}
}

// exitError maps the program's exit to the job's fate.
func (c *Command) exitError(ctx context.Context, name string, res programExit, out []byte) error {
	if res.err != nil {
		return fmt.Errorf("command %s: %w", name, res.err)
	}
	ws := res.ws
	if ws.Exited() && ws.ExitStatus() == 0 {
		return nil
	}
	var what string
	switch {
	case ws.Signaled():
		what = "killed by signal " + unix.SignalName(ws.Signal())
	default:
		what = "exit code " + strconv.Itoa(ws.ExitStatus())
	}
	e := &runError{}
	stopped := ctx.Err()
	if stopped != nil {
		cause := context.Cause(ctx)
		if errors.Is(cause, context.DeadlineExceeded) {
			// The deadline matters; the signal is detail.
			what = timeoutText(cause) + " (" + what + ")"
		} else {
			what += " after " + cause.Error()
		}
		e.errs = append(e.errs, cause)
	}
	var over string
	if stopped == nil && !c.limits.IsZero() {
		var detail string
		if over, detail = c.limits.overLimit(ws, &res.ru); over != "" {
			// The limit matters; the exit is detail.
			what = over + " (" + what + detail + ")"
		}
	}
	e.msg = "command " + name + ": " + what
	if len(out) > 0 {
		e.msg += fmt.Sprintf("; output: %q", lastBytes(out, errorOutput))
	}
	switch {
	case stopped == nil && c.permanent[ws.ExitStatus()]:
		return queue.Permanent(e)
	case over != "":
		return limitError(c.limits, e)
	}
	return e
}

// runError is a command that ran and failed. Its chain holds the
// context's error when that ended the run.
type runError struct {
	msg  string
	errs []error
}

func (e *runError) Error() string   { return e.msg }
func (e *runError) Unwrap() []error { return e.errs }

// startError makes a failure to start permanent, unless it is exhausted
// resources or a binary being replaced, which might pass.
func startError(name string, err error) error {
	err = fmt.Errorf("start command %s: %w", name, err)
	for _, transient := range []error{syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE, syscall.ETXTBSY} {
		if errors.Is(err, transient) {
			return err
		}
	}
	return queue.Permanent(err)
}

func (c *Command) environ(ctx context.Context, job *queue.Job) []string {
	env := make(map[string]string, len(inheritedEnv)+len(c.env)+7)
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	if zone, ok := c.zones[job.Schedule]; ok && job.Schedule != "" && zone != "" {
		env[envTZ] = zone
	}
	maps.Copy(env, c.env)
	var scheduledAt string
	if !job.ScheduledAt.IsZero() {
		scheduledAt = job.ScheduledAt.UTC().Format(time.RFC3339)
	}
	env[envJobID] = strconv.FormatInt(job.ID, 10)
	env[envKey] = job.Key
	env[envAttempt] = strconv.Itoa(job.Attempt)
	env[envSchedule] = job.Schedule
	env[envScheduledAt] = scheduledAt
	// The attempt's span, when traced: the program's own spans join it.
	if tp := queue.Traceparent(ctx); tp != "" {
		env[envTraceparent] = tp
		if ts := queue.Tracestate(ctx); ts != "" {
			env[envTracestate] = ts
		}
	}
	list := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}
