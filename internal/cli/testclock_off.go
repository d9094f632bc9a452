//go:build !schedulertest

package cli

import (
	"log/slog"

	"github.com/scheduler-run/scheduler/clock"
)

// programClock is the wall clock; a release build cannot shift it.
func programClock(func(string) string) (clock.Clock, error) { return clock.Real{}, nil }

// warnTestClock does nothing: the clock is never shifted.
func warnTestClock(*slog.Logger, clock.Clock) {}
