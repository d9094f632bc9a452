// Package tasks owns how task types execute: it turns what a [tasks.NAME]
// table says of a task (a command line, a URL, or nothing when the task is a
// Go handler compiled into the binary) into a queue.Handler, and runs it.
//
// A Command runs a program directly, never through a shell, in its own
// process group, with an explicit environment, and makes sure that no process
// it started outlives the attempt, nor the daemon. An HTTP handler sends the
// job's payload to a URL and maps the response status to done, retry or
// dead. A Registry holds the Go handlers a team compiles in next to these
// built-ins.
//
// Each command runs under a supervisor: the running binary started again,
// which a binary that runs commands lets do its work by calling
// RunSubprocess first thing in main. The supervisor is the program's parent
// and the subreaper of everything the program starts (PR_SET_CHILD_SUBREAPER),
// so that a process that leaves the group (setsid) or is orphaned is still
// found. It holds the read end of a lifeline whose write end only the
// daemon holds: when the daemon dies, however it dies, the lifeline ends
// and the supervisor kills the group and every descendant. When the program
// exits it kills what is left of them, reaps them, and reports the
// program's wait status and resource usage to the daemon.
//
// The package knows nothing of cron, TOML or SQL: schedules, configuration
// files and the store belong to the schedule and queue packages. Handlers
// only report, through their error, what the queue should do with a job.
//
// A command's resource limits (Limits: memory, CPU time, open files) are
// setrlimit(2) limits that the running binary, started by the supervisor
// once more as a launcher, sets on itself before it becomes the program:
// os/exec cannot set them for one child alone, and no cgroup is ever created
// or written.
//
// Commands rely on Unix process groups; the daemon runs on Linux, where a
// finished program's group is killed before the program is reaped, so its
// group ID cannot have been reused by then, and where descendants are found
// in /proc. Elsewhere the supervisor kills the group alone.
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
