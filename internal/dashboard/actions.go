package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
	"go.opentelemetry.io/otel/trace"
)

// The actions, as in /actions/NAME and their forms' data-action.
const (
	ActionTrigger = "trigger"
	ActionPause   = "pause"
	ActionResume  = "resume"
	ActionRetry   = "retry"
	ActionCancel  = "cancel"
	ActionAck     = "ack"
)

// ActionsConfig configures Actions. Queue and ConfigFunc are required.
type ActionsConfig struct {
	// Queue is the database the actions write.
	Queue *queue.Client
	// ConfigFunc returns the config the daemon runs now.
	ConfigFunc func() *config.Config
	// TracerProvider, when set, makes each trigger a span that parents its
	// jobs' attempts. Default: none.
	TracerProvider trace.TracerProvider
	Logger         *slog.Logger // Default: discard.
}

// Actions are what a logged-in operator may do when [http] actions = true:
// -trigger, -pause, -resume, -retry, -cancel, -discard and -ack, through
// the same functions, the retry and discard of a selection of jobs, and the
// retry of a schedule's dead jobs. Auth.Handler serves them once a request
// passed its checks.
// Actions is safe for concurrent use.
type Actions struct {
	cfg ActionsConfig
	log *slog.Logger
}

// NewActions returns the actions of cfg.
func NewActions(cfg ActionsConfig) (*Actions, error) {
	if cfg.Queue == nil {
		return nil, errors.New("dashboard actions: no queue")
	}
	if cfg.ConfigFunc == nil {
		return nil, errors.New("dashboard actions: no ConfigFunc")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Actions{cfg: cfg, log: cfg.Logger.With("component", "dashboard")}, nil
}

// do runs and logs action name for who at addr, and returns what the next
// page says; found is false for no such action. An action that cannot be
// done is not a request error: the message says why, and nothing changed.
func (x *Actions) do(ctx context.Context, name string, form url.Values, who, addr string) (msg string, found bool) {
	attrs := []any{"action", name, "who", who, "remote_addr", addr}
	var err error
	switch name {
	case ActionTrigger, ActionPause, ActionResume:
		sched, item := form.Get("schedule"), form.Get("item")
		attrs = append(attrs, "schedule", sched)
		if item != "" {
			attrs = append(attrs, "item", item)
		}
		payload := strings.TrimSpace(form.Get("payload"))
		if payload != "" {
			attrs = append(attrs, "payload_bytes", len(payload))
		}
		msg, err = x.scheduleAction(ctx, name, sched, item, payload)
	case ActionAck:
		ref := form.Get("incident")
		attrs = append(attrs, "incident", ref)
		msg, err = x.ackIncident(ctx, ref, who, addr)
	case ActionRetry, ActionCancel:
		ref := form.Get("job")
		attrs = append(attrs, "job_id", ref)
		msg, err = x.jobAction(ctx, name, ref, who, addr)
	case ActionRetryJobs, ActionDiscardJobs:
		var ids []int64
		ids, err = selection(name, form)
		if err != nil {
			break
		}
		attrs = append(attrs, "job_ids", idList(ids))
		if name == ActionRetryJobs {
			msg, err = x.retryJobs(ctx, ids)
		} else {
			msg, err = x.discardJobs(ctx, ids, fmt.Sprintf("%s (dashboard, from %s)", who, addr))
		}
	case ActionRetryDead:
		attrs = append(attrs, "schedule", form.Get("schedule"))
		msg, err = x.retryDead(ctx, form.Get("schedule"), form)
	default:
		return "", false
	}
	if err != nil {
		x.log.WarnContext(ctx, "dashboard action failed", append(attrs, "err", err)...)
		return err.Error(), true
	}
	x.log.InfoContext(ctx, "dashboard action", append(attrs, "result", msg)...)
	return msg, true
}

// scheduleAction triggers, pauses or resumes schedule name; a trigger
// runs item only when given, with payload merged over each job's.
func (x *Actions) scheduleAction(ctx context.Context, action, name, item, payload string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%s: no schedule given", action)
	}
	cfg, q := x.cfg.ConfigFunc(), x.cfg.Queue
	switch action {
	case ActionTrigger:
		opts := schedule.TriggerOptions{Item: item, Now: q.Clock().Now(), TracerProvider: x.cfg.TracerProvider}
		if payload != "" {
			if err := schedule.CheckTriggerPayload([]byte(payload)); err != nil {
				return "", fmt.Errorf("trigger %s not done: payload: %w", name, err)
			}
			opts.Payload = json.RawMessage(payload)
		}
		res, err := schedule.Trigger(ctx, q, cfg, name, opts)
		if err != nil {
			return "", err
		}
		ids := make([]string, len(res))
		for i, e := range res {
			ids[i] = strconv.FormatInt(e.ID, 10)
		}
		what := name
		if item != "" {
			what += " item " + item
		}
		if payload != "" {
			what += " with the payload given"
		}
		if len(ids) == 1 {
			return fmt.Sprintf("Triggered %s: job %s enqueued.", what, ids[0]), nil
		}
		return fmt.Sprintf("Triggered %s: jobs %s enqueued.", what, strings.Join(ids, ", ")), nil
	case ActionPause:
		if err := schedule.Pause(ctx, q, cfg, name); err != nil {
			return "", err
		}
		return fmt.Sprintf("Paused %s: no instant of it runs until it is resumed.", name), nil
	}
	r, err := schedule.ResumeSettled(ctx, q, cfg, name, q.Clock().Now(), false)
	if err != nil {
		return "", err
	}
	switch {
	case !r.WasPaused:
		return fmt.Sprintf("%s was not paused: nothing to do.", name), nil
	case r.Runs == 0 && r.Skipped == 0:
		return fmt.Sprintf("Resumed %s.", name), nil
	}
	return fmt.Sprintf("Resumed %s: of the instants missed while paused, %d enqueued to run and %d skipped (its catch_up policy).",
		name, r.Runs, r.Skipped), nil
}

func (x *Actions) jobAction(ctx context.Context, action, ref, who, addr string) (string, error) {
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil || id <= 0 {
		return "", fmt.Errorf("%s: %q is not a job id", action, ref)
	}
	q := x.cfg.Queue
	j, err := q.Job(ctx, id)
	if err != nil {
		return "", fmt.Errorf("%s job %d: %w", action, id, err)
	}
	if action == ActionRetry {
		if err := q.Retry(ctx, id); err != nil {
			if errors.Is(err, queue.ErrNotFound) {
				return "", fmt.Errorf("job %d is %s, not dead: only a dead or discarded job can be retried", id, j.State)
			}
			return "", fmt.Errorf("retry job %d: %w", id, err)
		}
		return fmt.Sprintf("Job %d made pending with fresh attempts.", id), nil
	}
	st, err := q.RequestCancel(ctx, id, fmt.Sprintf("%s (dashboard, from %s)", who, addr))
	if err != nil {
		return "", fmt.Errorf("cancel job %d: %w", id, err)
	}
	switch st {
	case queue.StatePending:
		return fmt.Sprintf("Job %d cancelled.", id), nil
	case queue.StateCancelled:
		return fmt.Sprintf("Job %d was already cancelled.", id), nil
	case queue.StateRunning:
		return fmt.Sprintf("Job %d is running on %s: cancel requested; its daemon stops it.", id, j.Owner), nil
	}
	return "", fmt.Errorf("job %d is %s: only a pending or running job can be cancelled", id, st)
}

// Form is one action's form: a POST to /actions/ACTION with the CSRF
// token, the page to come back to, and what it acts on.
type Form struct {
	Action   string // ActionTrigger ... ActionCancel
	Label    string // the button's text
	Title    string // the button's tooltip
	Schedule string
	Item     string
	Job      int64
	Incident int64
	CSRF     string
	Back     string
}

func (s Session) form(action, label, title string) Form {
	return Form{Action: action, Label: label, Title: title, CSRF: s.CSRF, Back: s.Back}
}

// ScheduleForms are a schedule's trigger and pause or resume forms; none
// when the session may not act.
func (s Session) ScheduleForms(name string, paused bool) []Form {
	if !s.Actions {
		return nil
	}
	trigger := s.form(ActionTrigger, "Trigger", "run "+name+" now (every item), outside its timetable")
	trigger.Schedule = name
	toggle := s.form(ActionPause, "Pause", "stop materialising "+name+"'s instants until resumed")
	if paused {
		toggle = s.form(ActionResume, "Resume", "resume "+name+": its catch_up policy settles the instants missed while paused")
	}
	toggle.Schedule = name
	return []Form{trigger, toggle}
}

// TriggerForm triggers schedule name, or one of its items, with a payload;
// nil when the session may not act.
func (s Session) TriggerForm(name string) *Form {
	if !s.Actions {
		return nil
	}
	f := s.form(ActionTrigger, "Trigger with this payload", "run "+name+" now with the payload merged over each job's")
	f.Schedule = name
	return &f
}

// ItemForms trigger one fan-out item; none when the session may not act.
func (s Session) ItemForms(name, item string) []Form {
	if !s.Actions || item == "" {
		return nil
	}
	f := s.form(ActionTrigger, "Trigger "+item, "run "+name+" for "+item+" only, now")
	f.Schedule, f.Item = name, item
	return []Form{f}
}

// JobForms retry a dead job or cancel a pending or running one; none when
// the session may not act.
func (s Session) JobForms(id int64, state string) []Form {
	if !s.Actions || id <= 0 {
		return nil
	}
	var f Form
	switch queue.State(state) {
	case queue.StateDead, queue.StateDiscarded:
		f = s.form(ActionRetry, "Retry", fmt.Sprintf("make job %d pending again with fresh attempts", id))
	case queue.StatePending, queue.StateRunning:
		f = s.form(ActionCancel, "Cancel", fmt.Sprintf("cancel job %d; a running one is stopped by its daemon", id))
	default:
		return nil
	}
	f.Job = id
	return []Form{f}
}
