package queuetest_test

import (
	"os"
	"testing"

	"github.com/scheduler-run/scheduler/internal/examplet"
)

// TestMain runs the PostgreSQL examples (named _postgres) only where a
// test database is named (SCHEDULER_TEST_POSTGRES, which .ci/run always
// sets); without one they are left out, saying so. The tests skip by
// themselves.
func TestMain(m *testing.M) {
	os.Exit(examplet.Main(m, "queuetest", "_postgres$"))
}
