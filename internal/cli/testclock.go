//go:build schedulertest

package cli

import (
	"log/slog"

	"github.com/scheduler-run/scheduler/clock"
)

// testClockEnv names a file whose content shifts the wall clock
// (clock.OffsetFile), for black-box tests. Only a schedulertest build
// reads it.
const testClockEnv = "SCHEDULER_TEST_CLOCK_OFFSET_FILE"

// programClock is the wall clock, shifted by testClockEnv's file if set.
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
