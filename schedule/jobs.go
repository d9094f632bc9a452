package schedule

import (
	"encoding/json"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// DedupKey returns the dedup key of an item's job at an instant:
// "schedule|item|instant", the instant in UTC RFC 3339. The beat and
// Backfill share it, so an instant materialised twice inserts one job.
func DedupKey(schedule, item string, at time.Time) string {
	return schedule + "|" + item + "|" + at.UTC().Format(time.RFC3339)
}

// manualKey returns the dedup key of a manual run.
func manualKey(schedule, item, key string) string {
	return schedule + "|" + item + "|manual|" + key
}

// runJob is the job of s's item at the instant at, its earliest start.
func runJob(s *config.Schedule, task *config.Task, item, key string, payload json.RawMessage, at time.Time) queue.NewJob {
	return queue.NewJob{
		Key:         key,
		Type:        s.Task,
		Payload:     payload,
		Priority:    task.Priority,
		Version:     task.Version,
		RunAt:       at,
		MaxAttempts: task.MaxAttempts,
		Schedule:    s.Name,
		Item:        item,
		ScheduledAt: at,
	}
}
