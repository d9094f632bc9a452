package api

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// The views below are what the API answers, in the shapes openapi.json
// declares. Instants are RFC 3339; a value that does not exist is null.

// rfc3339 is t in loc, or nil when t is zero.
func rfc3339(t time.Time, loc *time.Location) *string {
	if t.IsZero() {
		return nil
	}
	s := t.In(loc).Format(time.RFC3339)
	return &s
}

// jobView is a job, masked as its task's redact and redact_output say.
type jobView struct {
	ID          int64           `json:"id"`
	Key         string          `json:"key"`
	Type        string          `json:"type"`
	State       string          `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Priority    int             `json:"priority"`
	Version     int             `json:"version"`
	Payload     json.RawMessage `json:"payload"`
	// PayloadError says why Payload is a marker: a stored payload no
	// enqueue would take.
	PayloadError *string       `json:"payload_error"`
	Schedule     *string       `json:"schedule"`
	Item         *string       `json:"item"`
	ScheduledAt  *string       `json:"scheduled_at"`
	RunAt        *string       `json:"run_at"`
	CreatedAt    *string       `json:"created_at"`
	StartedAt    *string       `json:"started_at"`
	FinishedAt   *string       `json:"finished_at"`
	RetriedAt    *string       `json:"retried_at"`
	DiscardedAt  *string       `json:"discarded_at"`
	DiscardedBy  *string       `json:"discarded_by"`
	Owner        *string       `json:"owner"`
	LastError    *string       `json:"last_error"`
	Attempts     []attemptView `json:"attempts,omitempty"`
	redactor     *config.Redactor
}

type attemptView struct {
	Number     int     `json:"number"`
	Worker     string  `json:"worker"`
	StartedAt  *string `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
	Outcome    string  `json:"outcome"`
	Error      string  `json:"error"`
	Output     string  `json:"output"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// viewJob is j as the API shows it, masked by its task in cfg (nil: none).
func viewJob(j *queue.Job, cfg *config.Config) jobView {
	r := cfg.Redactor(j.Type)
	v := jobView{ID: j.ID, Key: j.Key, Type: j.Type, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		Priority: j.Priority, Version: j.Version, Schedule: optString(j.Schedule), Item: optString(j.Item),
		ScheduledAt: rfc3339(j.ScheduledAt, time.UTC), RunAt: rfc3339(j.RunAt, time.UTC), CreatedAt: rfc3339(j.CreatedAt, time.UTC),
		StartedAt: rfc3339(j.StartedAt, time.UTC), FinishedAt: rfc3339(j.FinishedAt, time.UTC), RetriedAt: rfc3339(j.RetriedAt, time.UTC),
		DiscardedAt: rfc3339(j.DiscardedAt, time.UTC), DiscardedBy: optString(j.DiscardedBy), Owner: optString(j.Owner),
		LastError: optString(r.Attempt(j.Payload, j.LastError)), redactor: r}
	if err := queue.CheckPayload(j.Payload); err != nil {
		// One unreadable row must not break a listing; its text may hold
		// secrets redact cannot find.
		v.Payload, _ = json.Marshal(fmt.Sprintf("[unreadable payload, %d bytes]", len(j.Payload)))
		v.PayloadError = optString(err.Error())
	} else {
		v.Payload = r.Payload(j.Payload)
	}
	return v
}

// withAttempts adds as to v, masked as v's job.
func (v jobView) withAttempts(j *queue.Job, as []queue.Attempt) jobView {
	v.Attempts = make([]attemptView, 0, len(as))
	for _, at := range as {
		v.Attempts = append(v.Attempts, attemptView{Number: at.Number, Worker: at.Worker, StartedAt: rfc3339(at.StartedAt, time.UTC),
			FinishedAt: rfc3339(at.FinishedAt, time.UTC), Outcome: string(at.Outcome),
			Error: v.redactor.Attempt(j.Payload, at.Error), Output: v.redactor.Attempt(j.Payload, at.Output)})
	}
	return v
}

// runView is a schedule's run: its instant (or enqueue, for a manual
// run), the state of its job and the job.
type runView struct {
	At    *string `json:"at"`
	State string  `json:"state"`
	JobID int64   `json:"job_id"`
}

// scheduleView is a schedule with its next run and last outcomes.
type scheduleView struct {
	Name       string  `json:"name"`
	Configured bool    `json:"configured"` // false: only the database's jobs name it
	Cron       *string `json:"cron"`
	Zone       *string `json:"zone"`
	Task       *string `json:"task"`
	After      *string `json:"after"` // a schedule with after: its upstream
	Paused     bool    `json:"paused"`
	NextRun    *string `json:"next_run"` // null: paused, not configured, or after
	Waiting    *string `json:"waiting"`  // a schedule with after: "waiting: N of M ended"
	// LastRun is the job of the newest instant; LastManualRun the newest
	// trigger's.
	LastRun       *runView `json:"last_run"`
	LastManualRun *runView `json:"last_manual_run"`
}

type alarmView struct {
	ID       int64           `json:"id"`
	Schedule string          `json:"schedule"`
	Item     *string         `json:"item"`
	Instant  *string         `json:"instant"` // null for a manual run's job
	Kind     string          `json:"kind"`
	JobID    *int64          `json:"job_id"`
	Error    *string         `json:"error"`
	Open     bool            `json:"open"`
	RaisedAt *string         `json:"raised_at"`
	Detail   json.RawMessage `json:"detail"`
}

type incidentView struct {
	ID            int64   `json:"id"`
	Schedule      string  `json:"schedule"`
	Kind          string  `json:"kind"`
	Open          bool    `json:"open"`
	Count         int64   `json:"count"`
	First         *string `json:"first"`
	Last          *string `json:"last"`
	Reminders     int     `json:"reminders"`
	AckedBy       *string `json:"acked_by"`
	AckedAt       *string `json:"acked_at"`
	ResolvedAt    *string `json:"resolved_at"`
	SilencedUntil *string `json:"silenced_until"`
}

func viewIncident(in store.Incident, loc *time.Location, silences map[string]store.Silence) incidentView {
	v := incidentView{ID: in.ID, Schedule: in.Schedule, Kind: string(in.Kind), Open: in.Open, Count: in.Count,
		First: rfc3339(in.FirstAt, loc), Last: rfc3339(in.LastAt, loc), Reminders: in.Reminders,
		AckedBy: optString(in.AckedBy), AckedAt: rfc3339(in.AckedAt, time.UTC), ResolvedAt: rfc3339(in.ResolvedAt, time.UTC)}
	if s, ok := silences[in.Schedule]; ok {
		v.SilencedUntil = rfc3339(s.Until, time.UTC)
	}
	return v
}

// zone is the named schedule's zone in cfg, or UTC.
func zone(cfg *config.Config, name string) *time.Location {
	if s, ok := cfg.Schedule(name); ok {
		return s.Location
	}
	return time.UTC
}
