//go:build schedulertest

package cli

import (
	"log/slog"

	"github.com/scheduler-run/scheduler/clock"
)

// testClockEnv names a file whose content shifts the program's wall clock
// (see clock.OffsetFile). Black-box tests use it to make the clock jump.
// Only a binary built with the schedulertest build tag reads it.
const testClockEnv = "SCHEDULER_TEST_CLOCK_OFFSET_FILE"

// programClock is the wall clock, shifted by the file that
// SCHEDULER_TEST_CLOCK_OFFSET_FILE names in env when it names one.
func programClock(env func(string) string) (clock.Clock, error) {
	if path := env(testClockEnv); path != "" {
		return &clock.OffsetFile{Path: path}, nil
	}
	return clock.Real{}, nil
}

// warnTestClock warns that clk is shifted, when it is.
func warnTestClock(log *slog.Logger, clk clock.Clock) {
	if o, ok := clk.(*clock.OffsetFile); ok {
		log.Warn("test clock in use: the wall clock is shifted by the file in "+testClockEnv, "file", o.Path)
	}
}
