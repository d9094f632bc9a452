// Command scheduler runs recurring jobs from schedules.toml on a durable
// SQLite queue, and inspects and controls that queue. See README.md and the
// cli package.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/scheduler-run/scheduler/internal/cli"
	"github.com/scheduler-run/scheduler/tasks"
)

// version, when set with -ldflags "-X main.version=v1.2.3", is what
// -version prints; empty derives it from the build (see cli.Options).
var version string

func main() {
	// Every command runs under this binary started again as its
	// supervisor (and, with resource limits, as the launcher that sets
	// them): such a process does its work here and exits.
	if code, ok := tasks.RunSubprocess(os.Args); ok {
		os.Exit(code)
	}
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	err := cli.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, signals, cli.Options{Version: version})
	if err != nil && !errors.Is(err, cli.ErrReported) {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
	}
	os.Exit(cli.ExitCode(err))
}
