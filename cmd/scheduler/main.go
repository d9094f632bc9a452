// Command scheduler runs recurring jobs from schedules.toml on a durable
// queue, and inspects and controls that queue. See README.md; a program
// with Go task types of its own is built on cmd/scheduler/app.
//
// main serves the supervisor subprocesses, asks for the signals and exits
// with the status; app.Run is the command.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/scheduler-run/scheduler/cmd/scheduler/app"
	"github.com/scheduler-run/scheduler/tasks"
)

// version, set with -ldflags "-X main.version=v1.2.3", is what -version
// prints; empty derives it from the build.
var version string

func main() {
	// Commands run under this binary restarted as their supervisor (and
	// launcher of resource limits); such a process ends here.
	if code, ok := tasks.RunSubprocess(os.Args); ok {
		os.Exit(code)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	err := app.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, signals, app.Options{Version: version})
	if err != nil && !errors.Is(err, app.ErrReported) {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
	}
	os.Exit(app.ExitCode(err))
}
