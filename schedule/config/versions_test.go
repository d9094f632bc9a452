package config

import (
	"slices"
	"testing"
)

// TestTaskVersions: a task's version defaults to 1 and its accepted
// versions to its version; the accepted ones reach the queue policy its
// worker registers (TestJobsCarryTheTaskVersion: the version reaches its
// jobs).
func TestTaskVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		keys    string
		version int
		accepts []int
	}{
		{"defaults", "", 1, []int{1}},
		{"version alone", "version = 2\n", 2, []int{2}},
		{"rolling upgrade", "version = 1\naccepts = [1, 2]\n", 1, []int{1, 2}},
		{"producer ahead of its worker", "version = 2\naccepts = [1]\n", 2, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := "[tasks.t]\ncommand = [\"true\"]\n" + tc.keys + "[[schedule]]\nname = \"a\"\ncron = \"@daily\"\ntask = \"t\"\n"
			cfg, err := Parse("t.toml", []byte(file))
			if err != nil {
				t.Fatal(err)
			}
			task := cfg.Tasks["t"]
			if task.Version != tc.version || !slices.Equal(task.Accepts, tc.accepts) {
				t.Errorf("version %d, accepts %v; want %d, %v", task.Version, task.Accepts, tc.version, tc.accepts)
			}
			if got := task.TypeConfig().Accepts; !slices.Equal(got, tc.accepts) {
				t.Errorf("TypeConfig().Accepts = %v, want %v", got, tc.accepts)
			}
		})
	}
}
