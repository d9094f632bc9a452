// Package app is the scheduler command for a program of its own: a team
// that adds Go task types builds its binary on Run, keeping the daemon,
// operator commands, dashboard and the command and http task types.
// cmd/scheduler is Run with no options.
//
// It exposes the command's internal/ packages to other modules, adding no
// behaviour and knowing nothing of what the command does.
//
// A Go task type is registered in Options.Tasks, typed with tasks.Register
// (a queue.WorkFunc[T] whose arguments are the job's payload) or untyped
// with Registry.Register. ExampleRun checks a config that names one;
// ExampleRun_typedTask runs the daemon, triggers a run and stops it.
// docs/extending.md shows the whole main.
package app

import (
	"context"
	"io"
	"os"

	"github.com/scheduler-run/scheduler/internal/cli"
	"github.com/scheduler-run/scheduler/tasks"
)

// Options are what a program built on Run adds to the scheduler command.
// The zero value is the command as cmd/scheduler builds it.
type Options struct {
	// Tasks registers Go task types beside command and http: a
	// [tasks.NAME] table with neither command nor url runs the handler
	// registered under NAME. Nil registers none.
	Tasks func(r *tasks.Registry) error
	// Version is what -version prints and the daemon records. Empty
	// derives it from the build.
	Version string
	// Stdin is what -hash-password and -payload - read. Nil: os.Stdin.
	Stdin io.Reader
}

// Exit statuses, as ExitCode returns them.
const (
	ExitOK          = cli.ExitOK
	ExitRuntime     = cli.ExitRuntime     // a runtime failure
	ExitUsage       = cli.ExitUsage       // bad flags or a bad config file
	ExitInterrupted = cli.ExitInterrupted // a command stopped by a signal
)

// ErrReported is wrapped by an error whose details Run already printed on
// stderr: the caller prints nothing more of it.
var ErrReported = cli.ErrReported

// Run is the scheduler command; args are its flags without the program
// name. signals carries SIGTERM, SIGINT and SIGHUP: the daemon stops on
// the first two and reloads its config on SIGHUP; an operator command
// stops on any. ExitCode maps Run's error to the exit status. Only main
// calls os.Exit and signal.Notify; a program that runs command tasks
// calls tasks.RunSubprocess first in its main.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, signals <-chan os.Signal, opts Options) error {
	return cli.Run(ctx, args, stdout, stderr, signals, cli.Options(opts))
}

// ExitCode maps Run's error to the process's exit status.
func ExitCode(err error) int { return cli.ExitCode(err) }
