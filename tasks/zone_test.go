package tasks

import (
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/queue"
)

// TestCommandTZFromSchedule: a job of a schedule gets TZ set to the
// schedule's zone, so that date(1) in a nightly job prints its wall clock;
// the task's own env wins; a job of another schedule, or of none, keeps the
// daemon's TZ.
func TestCommandTZFromSchedule(t *testing.T) {
	// Not parallel: it sets the test process's own TZ.
	t.Setenv("TZ", "Europe/Zurich")
	zones := map[string]string{"nightly": "Europe/Istanbul", "hourly": "UTC"}
	tests := []struct {
		name     string
		env      map[string]string
		schedule string
		want     string
	}{
		{name: "schedule's zone", schedule: "nightly", want: "Europe/Istanbul"},
		{name: "utc schedule", schedule: "hourly", want: "UTC"},
		{name: "task env wins", env: map[string]string{"TZ": "Asia/Tokyo"}, schedule: "nightly", want: "Asia/Tokyo"},
		{name: "unknown schedule", schedule: "removed", want: "Europe/Zurich"},
		{name: "job of no schedule", want: "Europe/Zurich"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCommand(t, CommandConfig{Argv: sh(`echo "$TZ"`), Env: tt.env, Zones: zones})
			job := testJob("")
			job.Schedule = tt.schedule
			out, err := runCommand(t, c, job)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if got := strings.TrimSpace(string(out)); got != tt.want {
				t.Errorf("TZ = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRegistryPassesZones: a command made from a Spec gets its Zones.
func TestRegistryPassesZones(t *testing.T) {
	t.Parallel()
	r := NewRegistry(Config{})
	h, err := r.Handler("t", Spec{Command: sh(`echo "$TZ"`), Zones: map[string]string{"s": "Asia/Tokyo"}})
	if err != nil {
		t.Fatal(err)
	}
	job := &queue.Job{ID: 1, Key: "k", Type: "t", Attempt: 1, MaxAttempts: 1, Schedule: "s"}
	if err := h.Work(t.Context(), job); err != nil {
		t.Fatalf("work: %v", err)
	}
	if got := strings.TrimSpace(string(job.Output())); got != "Asia/Tokyo" {
		t.Errorf("TZ = %q, want Asia/Tokyo", got)
	}
}
