// Package tasks owns how task types execute: it turns what a [tasks.NAME]
// table says of a task (a command line, a URL, or nothing when the task is a
// Go handler compiled into the binary) into a queue.Handler, and runs it.
//
// A Command runs a program directly, never through a shell, in its own
// process group, with an explicit environment, and makes sure that no process
// it started outlives the attempt. An HTTP handler sends the job's payload to
// a URL and maps the response status to done, retry or dead. A Registry holds
// the Go handlers a team compiles in next to these built-ins.
//
// The package knows nothing of cron, TOML or SQL: schedules, configuration
// files and the store belong to the schedule and queue packages. Handlers
// only report, through their error, what the queue should do with a job.
//
// A command's resource limits (Limits: memory, CPU time, open files) are
// setrlimit(2) limits that the running binary, re-executed as a launcher
// (ExecLimited), sets on itself before it becomes the program: os/exec cannot
// set them for one child alone, and no cgroup is ever created or written.
//
// Commands rely on Unix process groups; the daemon runs on Linux, where a
// finished command's group is killed before the command is reaped, so its
// group ID cannot have been reused by then.
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
