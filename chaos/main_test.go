package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Paths of the programs TestMain builds.
var (
	binary   string // the scheduler, built without -race for speed
	recorder string // testdata/recorder
)

// scale is the size of the long tests, chosen by SCHEDULER_CHAOS_SCALE.
type scale struct {
	name string
	// kills is how often TestKillStorm SIGKILLs the daemon.
	kills int
	// stormTriggerers is how many goroutines run -trigger processes during
	// the storm.
	stormTriggerers int
	// doneRows is how many old done jobs TestStorageHygiene purges.
	doneRows int
	// badSchedules is how many broken [[schedule]] tables the huge hostile
	// config holds.
	badSchedules int
}

var (
	scaleCI   = scale{name: "ci", kills: 20, stormTriggerers: 2, doneRows: 100_000, badSchedules: 2_000}
	scaleFull = scale{name: "full", kills: 60, stormTriggerers: 4, doneRows: 1_000_000, badSchedules: 5_000}
)

// size is the scale of this run.
var size = scaleCI

func TestMain(m *testing.M) {
	switch s := os.Getenv("SCHEDULER_CHAOS_SCALE"); s {
	case "", "ci":
	case "full":
		size = scaleFull
	default:
		fmt.Fprintf(os.Stderr, "SCHEDULER_CHAOS_SCALE=%q: want ci or full\n", s)
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "scheduler-chaos")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "scheduler")
	recorder = filepath.Join(dir, "recorder")
	for _, b := range []struct{ out, pkg string }{{binary, "github.com/scheduler-run/scheduler/cmd/scheduler"}, {recorder, "./testdata/recorder"}} {
		// No -race: the binaries are the system under test, not the test;
		// the race detector would slow every process the storm starts. The
		// schedulertest tag enables the clock-offset hook of clock_test.go.
		cmd := exec.Command("go", "build", "-tags", "schedulertest", "-o", b.out, b.pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", b.pkg, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// deadline bounds every wait of the suite; reaching it fails the test.
const deadline = 3 * time.Minute
