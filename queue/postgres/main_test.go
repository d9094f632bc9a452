package postgres_test

import (
	"os"
	"testing"

	"github.com/scheduler-run/scheduler/internal/examplet"
)

// TestMain runs the package's examples only where a test database is named
// (SCHEDULER_TEST_POSTGRES, which .ci/run always sets), each on a schema of
// its own (examplet.PostgresURL); without one they are left out, saying so.
func TestMain(m *testing.M) {
	os.Exit(examplet.Main(m, "postgres", "^Example"))
}
