package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// listJobs is -jobs.
func (a *app) listJobs(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	o := a.o
	js, err := q.List(ctx, queue.Filter{State: queue.State(o.state), Type: o.task, Schedule: o.sched, KeyPrefix: o.key, Limit: o.limit})
	if err != nil {
		return err
	}
	if a.o.json {
		return writeJSON(a.stdout, jobViews(js, a.cfg))
	}
	if len(js) == 0 {
		fmt.Fprintln(a.stdout, "no jobs match")
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "ID\tSTATE\tTASK\tATTEMPTS\tCREATED\tFINISHED\tKEY\tLAST ERROR\n")
	for _, j := range js {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", j.ID, j.State, j.Type, j.Attempt, j.MaxAttempts,
			rfc3339(j.CreatedAt, time.UTC), rfc3339(j.FinishedAt, time.UTC), j.Key, orDash(firstLine(a.cfg.Redactor(j.Type).Attempt(j.Payload, j.LastError), 60)))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(js) == o.limit {
		fmt.Fprintf(a.stdout, "%d newest shown; more may match (raise -limit, up to %d, or narrow the filters)\n", len(js), queue.MaxList)
	}
	return nil
}

// listDead is -dead: the dead jobs, newest first.
func (a *app) listDead(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	dead, err := q.List(ctx, queue.Filter{State: queue.StateDead, Limit: queue.MaxList})
	if err != nil {
		return err
	}
	if a.o.json {
		return writeJSON(a.stdout, jobViews(dead, a.cfg))
	}
	if len(dead) == 0 {
		fmt.Fprintln(a.stdout, "no dead jobs")
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "ID\tTYPE\tKEY\tATTEMPTS\tDIED\tLAST ERROR\n")
	for _, j := range dead {
		fmt.Fprintf(w, "%d\t%s\t%s\t%d/%d\t%s\t%s\n", j.ID, j.Type, j.Key, j.Attempt, j.MaxAttempts, rfc3339(j.FinishedAt, time.UTC), firstLine(a.cfg.Redactor(j.Type).Attempt(j.Payload, j.LastError), 100))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(dead) == queue.MaxList {
		fmt.Fprintf(a.stdout, "%d newest shown; older dead jobs are not listed (-retry all retries every one, -discard all discards every one)\n", len(dead))
	}
	return nil
}

// showJob is -job: a job with its attempts, or the skip of the instant a
// key names when no job has it.
func (a *app) showJob(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	j, err := a.findJob(ctx, q, a.o.job)
	if _, none := errors.AsType[*noJobError](err); none {
		if s, ok, err := a.skipOfKey(ctx, q, a.o.job); ok || err != nil {
			if err != nil {
				return err
			}
			return a.printSkippedJob(a.o.job, s)
		}
	}
	if err != nil {
		return err
	}
	as, err := q.Attempts(ctx, j.ID)
	if err != nil {
		return err
	}
	v := a.jobDetail(j, as)
	if a.o.json {
		return writeJSON(a.stdout, v)
	}
	printJob(a.stdout, v)
	return nil
}

// jobDetail is j as -job shows it, masked as its task says.
func (a *app) jobDetail(j *queue.Job, as []queue.Attempt) jobView {
	v := viewJob(j, a.cfg)
	r := a.cfg.Redactor(j.Type)
	if loc := a.scheduleZone(j.Schedule); loc != nil && !j.ScheduledAt.IsZero() {
		v.ScheduledAtZone, v.Zone = rfc3339(j.ScheduledAt, loc), loc.String()
	}
	for _, at := range as {
		v.Attempts = append(v.Attempts, attemptView{Number: at.Number, Worker: at.Worker, StartedAt: rfc3339(at.StartedAt, time.UTC),
			FinishedAt: rfc3339(at.FinishedAt, time.UTC), Outcome: string(at.Outcome), Error: r.Attempt(j.Payload, at.Error), Output: r.Attempt(j.Payload, at.Output)})
	}
	return v
}

// printJob prints -job's text: each field with a value, then the attempts.
func printJob(out io.Writer, v jobView) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s\t%s\n", k, v)
		}
	}
	row("id", strconv.FormatInt(v.ID, 10))
	row("key", v.Key)
	row("type", v.Type)
	row("state", v.State)
	row("attempts", fmt.Sprintf("%d of %d", v.Attempt, v.MaxAttempts))
	row("version", strconv.Itoa(v.Version))
	row("payload", string(v.Payload))
	row("payload error", v.PayloadError)
	row("schedule", v.Schedule)
	row("item", v.Item)
	if v.ScheduledAtZone != "" {
		row("scheduled at", fmt.Sprintf("%s (%s %s)", v.ScheduledAt, v.ScheduledAtZone, v.Zone))
	} else {
		row("scheduled at", v.ScheduledAt)
	}
	row("run at", v.RunAt)
	row("created", v.CreatedAt)
	row("retried at", v.RetriedAt)
	row("discarded at", v.DiscardedAt)
	row("discarded by", v.DiscardedBy)
	row("started", v.StartedAt)
	row("finished", v.FinishedAt)
	row("lease until", v.LeaseUntil)
	row("owner", v.Owner)
	row("last error", firstLine(v.LastError, 200))
	w.Flush()
	for _, at := range v.Attempts {
		fmt.Fprintf(out, "\nattempt %d: %s, %s .. %s, worker %s\n", at.Number, at.Outcome, at.StartedAt, at.FinishedAt, at.Worker)
		if at.Error != "" {
			fmt.Fprintf(out, "  error: %s\n", strings.ReplaceAll(strings.TrimSpace(at.Error), "\n", "\n  "))
		}
		if at.Output != "" {
			fmt.Fprintf(out, "  output:\n    %s\n", strings.ReplaceAll(strings.TrimRight(at.Output, "\n"), "\n", "\n    "))
		}
	}
}

// jobView is a job as the CLI shows it.
type jobView struct {
	ID          int64           `json:"id"`
	Key         string          `json:"key"`
	Type        string          `json:"type"`
	State       string          `json:"state"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Priority    int             `json:"priority"`
	Version     int             `json:"version"` // of the payload's format
	Payload     json.RawMessage `json:"payload"`
	// PayloadError says why Payload is a marker (see payloadView).
	PayloadError string `json:"payload_error,omitempty"`
	Schedule     string `json:"schedule,omitempty"`
	Item         string `json:"item,omitempty"`
	ScheduledAt  string `json:"scheduled_at,omitempty"`
	// ScheduledAtZone is ScheduledAt in Zone, its schedule's zone (-job
	// only, when the config has the schedule).
	ScheduledAtZone string        `json:"scheduled_at_zone,omitempty"`
	Zone            string        `json:"zone,omitempty"`
	RunAt           string        `json:"run_at"`
	CreatedAt       string        `json:"created_at"`
	RetriedAt       string        `json:"retried_at,omitempty"` // the operator's latest -retry
	DiscardedAt     string        `json:"discarded_at,omitempty"`
	DiscardedBy     string        `json:"discarded_by,omitempty"`
	StartedAt       string        `json:"started_at,omitempty"`
	FinishedAt      string        `json:"finished_at,omitempty"`
	LeaseUntil      string        `json:"lease_until,omitempty"`
	Owner           string        `json:"owner,omitempty"`
	LastError       string        `json:"last_error,omitempty"`
	Attempts        []attemptView `json:"attempts,omitempty"`
}

type attemptView struct {
	Number     int    `json:"number"`
	Worker     string `json:"worker"`
	StartedAt  string `json:"started_at"`
	FinishedAt string `json:"finished_at"`
	Outcome    string `json:"outcome"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output,omitempty"`
}

// viewJob is j as the CLI shows it, masked by its task's redact and
// redact_output in cfg (nil: none).
func viewJob(j *queue.Job, cfg *config.Config) jobView {
	r := cfg.Redactor(j.Type)
	payload, payloadErr := payloadView(r, j.Payload)
	return jobView{
		ID: j.ID, Key: j.Key, Type: j.Type, State: string(j.State), Attempt: j.Attempt, MaxAttempts: j.MaxAttempts,
		Priority: j.Priority, Version: j.Version, Payload: payload, PayloadError: payloadErr, Schedule: j.Schedule, Item: j.Item, ScheduledAt: optTime(j.ScheduledAt),
		RunAt: rfc3339(j.RunAt, time.UTC), CreatedAt: rfc3339(j.CreatedAt, time.UTC), StartedAt: optTime(j.StartedAt),
		FinishedAt: optTime(j.FinishedAt), LeaseUntil: optTime(j.LeaseUntil), Owner: j.Owner, LastError: r.Attempt(j.Payload, j.LastError),
		RetriedAt: optTime(j.RetriedAt), DiscardedAt: optTime(j.DiscardedAt), DiscardedBy: j.DiscardedBy,
	}
}

// jobViews are js as viewJob shows them.
func jobViews(js []*queue.Job, cfg *config.Config) []jobView {
	out := make([]jobView, 0, len(js))
	for _, j := range js {
		out = append(out, viewJob(j, cfg))
	}
	return out
}
