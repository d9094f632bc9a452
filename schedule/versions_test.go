package schedule

import (
	"testing"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestJobsCarryTheTaskVersion: a schedule's jobs carry the version of the
// payload format of their task, 1 unless the task sets one.
func TestJobsCarryTheTaskVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		keys    string
		version int
	}{
		{"defaults", "", 1},
		{"version alone", "version = 2\n", 2},
		{"rolling upgrade", "version = 1\naccepts = [1, 2]\n", 1},
		{"producer ahead of its worker", "version = 2\naccepts = [1]\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := "[tasks.t]\ncommand = [\"true\"]\n" + tc.keys + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n"
			cfg, err := config.Parse("t.toml", []byte(file))
			if err != nil {
				t.Fatal(err)
			}
			s, _ := cfg.Schedule("a")
			if j := runJob(s, cfg.Tasks["t"], "", "k", nil, t0); j.Version != tc.version {
				t.Errorf("the schedule's job has version %d, want %d", j.Version, tc.version)
			}
		})
	}
}
