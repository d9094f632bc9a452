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

// DefaultKillGrace is how long a command's processes have between SIGTERM
// and SIGKILL when a CommandConfig leaves KillGrace zero.
const DefaultKillGrace = 10 * time.Second

// errorOutput is how many bytes of a failed command's output its error text
// quotes; the full tail goes to the job's output.
const errorOutput = 1 << 10

// outputDrain bounds how long a command's output is read after every
// process it started is gone. Only a process it did not start that holds
// the output pipe (one it was handed to) keeps it open that long.
const outputDrain = 2 * time.Second

// inheritedEnv lists the variables a command takes from the daemon's own
// environment, when they are set there. Nothing else is inherited.
var inheritedEnv = []string{"PATH", "HOME", "LANG", envTZ}

// envTZ is the zone variable: the daemon's, or the job's schedule's (see
// CommandConfig.Zones).
const envTZ = "TZ"

// Variables every command finds in its environment. They describe the job and
// cannot be set in CommandConfig.Env.
const (
	envPrefix      = "SCHEDULER_"
	envJobID       = "SCHEDULER_JOB_ID"
	envKey         = "SCHEDULER_KEY"
	envAttempt     = "SCHEDULER_ATTEMPT"
	envSchedule    = "SCHEDULER_SCHEDULE"
	envScheduledAt = "SCHEDULER_SCHEDULED_AT"
)

// CommandConfig configures a Command. Zero values select the defaults shown.
type CommandConfig struct {
	// Argv is the program and its arguments; required. Argv[0] is an
	// absolute path or a name looked up in the daemon's PATH. Every element
	// is a text/template executed over the job's payload decoded as a JSON
	// object (numbers keep their JSON text; a key whose value is null counts
	// as missing); a missing key fails the job permanently. Each result is
	// passed to the program as exactly one argument: there is no shell.
	Argv []string
	// Env is added to the environment the command gets from the daemon
	// (PATH, HOME, LANG and TZ, those that are set) and overrides it. Names
	// starting with SCHEDULER_ are reserved for the job's description.
	Env map[string]string
	// Dir is the command's working directory. Default: the daemon's.
	Dir string
	// Zones maps a schedule's name to its time zone (an IANA name). A job
	// of a schedule listed here gets TZ set to its zone, so that programs
	// like date(1) print the schedule's wall clock; a TZ in Env wins. Jobs
	// of other schedules, and jobs of none, keep the daemon's TZ.
	Zones map[string]string
	// PermanentExitCodes lists exit codes (1-255) after which retrying cannot
	// help: such an exit fails the job permanently.
	PermanentExitCodes []int
	// KillGrace is how long the command's processes have to exit between
	// SIGTERM and SIGKILL once the job's context is done. Default: 10s.
	KillGrace time.Duration
	// Clock times KillGrace and the output drain. Default: clock.Real{}.
	Clock clock.Clock
	// Logger receives process life-cycle events. Default: discard.
	Logger *slog.Logger
	// Groups, if set, tracks the command while it runs.
	Groups *ProcessGroups
	// Limits are the resource limits set in the command's process before
	// the program runs. Default: none.
	Limits Limits
	// Launcher is the binary started as the command's supervisor, and as
	// the launcher that sets Limits (see RunSubprocess). Default:
	// DefaultLauncher, the running binary.
	Launcher string
}

// Command is a queue.Handler that runs a program for each job. It is safe
// for concurrent use: each Work call runs its own process.
//
// The program gets the job's payload as JSON on stdin and the environment
// described in CommandConfig, plus SCHEDULER_JOB_ID, SCHEDULER_KEY,
// SCHEDULER_ATTEMPT, SCHEDULER_SCHEDULE and SCHEDULER_SCHEDULED_AT (RFC 3339
// in UTC, empty when the job stands for no instant). It runs in a new process
// group, under a supervisor: the daemon's binary started again (see
// RunSubprocess), which is the parent of the program and of every process
// orphaned below it. When the job's context is done the group and every
// process the program started get SIGTERM and, KillGrace later, SIGKILL;
// whatever is left of them when the program itself exits is killed at once;
// and if the daemon dies, the supervisor kills them all at once. So no
// process the command started outlives the attempt, nor the daemon. Its
// combined stdout and stderr, up to the last queue.MaxOutput bytes, become
// the job's output.
//
// Exit code 0 is success. An exit code in PermanentExitCodes, a payload the
// arguments cannot be built from, or a program that cannot be started fails
// the job permanently; any other exit code, a signal or the end of the
// context is an ordinary failed attempt.
//
// With Limits, the supervisor starts the launcher (the binary again), which
// sets them on itself and then becomes the program: the same process, group
// and pipes. A failure put down to a limit (see Limits) reads "memory limit
// 512MiB exceeded" or "cpu time limit 10m exceeded", followed by the exit,
// and fails the job permanently unless Limits.Retryable or, for the exit
// code, PermanentExitCodes says otherwise.
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
		zones:     maps.Clone(cfg.Zones),
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

// Args returns the argument vector c would run for payload, the job's JSON
// payload (empty means {}). A loader can call it to check the templates
// against an example payload before anything runs. The error names the
// argument and, for a missing key, the key.
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
	// Numbers stay as their JSON text: an ID like 12345678901234567890 must
	// not become 1.2345678901234567e+19 in an argument.
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

// dropNulls deletes the keys whose value is null, at every depth, so that
// missingkey=error rejects them instead of text/template printing
// "<no value>" into an argument.
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

// Work runs the command for job and records its output. See Command for how
// the result maps to the job's fate.
func (c *Command) Work(ctx context.Context, job *queue.Job) error {
	out, err := c.run(ctx, job)
	job.SetOutput(out)
	return err
}

// run runs the command and returns the tail of its output.
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
	sv, inW, outR, err := c.startSupervised(name, path, args, job)
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

// startSupervised starts the program at path under its supervisor, and
// returns with it the ends of the pipes the program does not hold: the
// writer of its stdin and the reader of its output. The pipes are ours,
// not exec's: exec's copying goroutines would make Wait hang for as long
// as any process holds stdout open.
func (c *Command) startSupervised(name, path string, args []string, job *queue.Job) (sv *supervisor, inW, outR *os.File, err error) {
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
	sv, startErr := startSupervisor(c.launcher, path, args, c.limits, c.environ(job), c.dir, inR, outW)
	inR.Close()
	outW.Close()
	if startErr != nil {
		inW.Close()
		outR.Close()
		return nil, nil, nil, startError(name, startErr)
	}
	return sv, inW, outR, nil
}

// communicate writes stdin to the program and reads the tail of its
// output until it exits, stopping it when ctx ends (see await), and
// returns that tail and how the program exited. It closes inW and outR.
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
		// Read errors, including the pipe being closed by the drain
		// deadline, only end the output.
		_, _ = io.Copy(tail, outR)
	})
	exited := make(chan programExit, 1)
	wg.Go(func() { exited <- sv.wait() })
	res := c.await(ctx, log, sv, exited)
	// The supervisor has exited, and with it every process the command
	// started: the output ends unless a process it did not start holds
	// the pipe.
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

// await waits for the program to exit. When ctx ends first, it stops it:
// SIGTERM, then SIGKILL once the kill grace has passed.
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

// programPath is where the program called name is: name itself when it
// holds a slash (a relative path is the working directory's), otherwise
// looked up in the daemon's PATH, as exec.Command would.
func programPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	return exec.LookPath(name)
}

// signal sends sig to the command's supervisor, which passes it on. A
// failure is logged: nothing the caller could act on can be returned, and
// the command's own result is still the job's fate.
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
			// The deadline is what the operator needs; the signal that
			// ended the process is detail.
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
			// The limit is what the operator needs; the exit is detail.
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

// runError is a command that ran and failed. Its text is for people; its
// chain holds, when the context ended the run, the context's error.
type runError struct {
	msg  string
	errs []error
}

func (e *runError) Error() string   { return e.msg }
func (e *runError) Unwrap() []error { return e.errs }

// startError classifies a failure to start a program. Not found, not
// executable, a bad working directory: retrying cannot help. Exhausted
// resources or a binary being replaced might pass.
func startError(name string, err error) error {
	err = fmt.Errorf("start command %s: %w", name, err)
	for _, transient := range []error{syscall.EAGAIN, syscall.ENOMEM, syscall.EMFILE, syscall.ENFILE, syscall.ETXTBSY} {
		if errors.Is(err, transient) {
			return err
		}
	}
	return queue.Permanent(err)
}

// environ builds the command's whole environment for job.
func (c *Command) environ(job *queue.Job) []string {
	env := make(map[string]string, len(inheritedEnv)+len(c.env)+5)
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
	list := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		list = append(list, k+"="+env[k])
	}
	return list
}
