// Command scheduler runs recurring jobs from schedules.toml on a durable
// SQLite queue, and inspects and controls that queue. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, signals)
	if err != nil && !errors.Is(err, errReported) {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
	}
	os.Exit(exitCode(err))
}

// Exit codes.
const (
	exitOK      = 0
	exitRuntime = 1
	exitUsage   = 2 // bad flags or a bad config file
)

// usageError marks an error in the command line or the config file.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// errReported wraps an error whose details were already printed.
var errReported = errors.New("see above")

func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		return exitUsage
	}
	return exitRuntime
}
