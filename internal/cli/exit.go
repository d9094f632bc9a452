package cli

import (
	"errors"
	"fmt"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitRuntime = 1 // a runtime failure
	ExitUsage   = 2 // bad flags or a bad config file
	// ExitInterrupted: an operator command stopped by a signal
	// (128 + SIGINT, as shells report Ctrl-C).
	ExitInterrupted = 130
)

// usageError marks an error in the command line or the config file.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef returns a usage error formatted as by fmt.Errorf.
func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// ErrReported wraps an error whose details Run already printed.
var ErrReported = errors.New("see above")

// ExitCode maps Run's error to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if _, ok := errors.AsType[*interruptedError](err); ok {
		return ExitInterrupted
	}
	if _, ok := errors.AsType[*usageError](err); ok {
		return ExitUsage
	}
	return ExitRuntime
}
