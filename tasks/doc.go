// Package tasks owns how task types execute: it turns a [tasks.NAME]
// table (a command line, a URL, or nothing for a compiled-in Go handler)
// into a queue.Handler.
//
// A Command runs a program directly, never through a shell, in its own
// process group, with an explicit environment, and no process it started
// outlives the attempt or the daemon. An HTTP handler sends the payload to
// a URL and maps the status to done, retry or dead. A Registry holds the
// Go handlers compiled in beside these.
//
// Each command runs under a supervisor: the running binary started again,
// which works once main calls RunSubprocess first. The supervisor is the
// program's parent and the subreaper of all it starts, so a process that
// calls setsid or is orphaned is still found. It holds the read end of a
// lifeline only the daemon holds open, so however the daemon dies, the
// supervisor kills the group and every descendant. When the program exits
// it kills and reaps what is left, and reports the program's wait status
// and resource usage.
//
// The package knows nothing of cron, TOML or SQL. Handlers only report,
// through their error, what the queue should do with a job.
//
// A Go task type is registered with Registry.Register (any queue.Handler)
// or, typed, with Register: a queue.WorkFunc[T] that gets the job's
// payload decoded into T and returns its output, named by T's Kind. A
// binary of your own registers them in cmd/scheduler/app's Options.Tasks.
// See Example (a Registry with Go, command and HTTP tasks), ExampleRegister
// (a typed task) and ExampleCommand_Args.
//
// A command's Limits (memory, CPU time, open files) are setrlimit(2)
// limits that the binary, started once more as a launcher, sets on itself
// before it becomes the program: os/exec cannot set them for one child,
// and no cgroup is ever created or written.
//
// Commands rely on Unix process groups. On Linux a finished program's
// group is killed before the program is reaped, so its ID cannot be
// reused meanwhile, and descendants are found in /proc. Elsewhere the
// supervisor kills the group alone.
package tasks

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeyJobID     = "job_id"
	logKeyJobType   = "job_type"
	logKeyAttempt   = "attempt"
	logKeyPID       = "pid"
	logKeySignal    = "signal"
	logKeyGrace     = "grace"
	logKeyDuration  = "duration"
	logKeyStatus    = "status"
	logKeyErr       = "err"
)
