package schedule

import (
	"encoding/json"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// DedupKey returns the dedup key of the job for one instant of one item of a
// schedule: "schedule|item|instant", the instant in UTC as RFC 3339 with
// seconds. The beat and Backfill use the same key, so materialising an
// instant twice inserts one job.
func DedupKey(schedule, item string, at time.Time) string {
	return schedule + "|" + item + "|" + at.UTC().Format(time.RFC3339)
}

// manualKey returns the dedup key of a manual run.
func manualKey(schedule, item, key string) string {
	return schedule + "|" + item + "|manual|" + key
}

// runJob is the job of one run of schedule s for one fan-out item, at the
// instant at (which is also its earliest start).
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
