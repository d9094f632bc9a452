package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
)

// The actions, as logged.
const (
	actionTrigger  = "trigger"
	actionPause    = "pause"
	actionResume   = "resume"
	actionBackfill = "backfill"
	actionRetry    = "retry"
	actionCancel   = "cancel"
	actionDiscard  = "discard"
	actionAck      = "ack"
)

// errorsIsNotFound reports whether err is the store's "not found".
func errorsIsNotFound(err error) bool { return errors.Is(err, queue.ErrNotFound) }

// triggerRequest is the body of POST /schedules/{name}/trigger.
type triggerRequest struct {
	Item    string          `json:"item"`
	Payload json.RawMessage `json:"payload"`
	Key     string          `json:"key"`
}

// enqueuedView is a job a trigger or a backfill enqueued, or found.
type enqueuedView struct {
	ID       *int64 `json:"id"` // null when its key's job was purged
	Key      string `json:"key"`
	Inserted bool   `json:"inserted"` // false: the key's job existed
}

func viewEnqueued(res []queue.Enqueued) (out []enqueuedView, inserted int) {
	out = make([]enqueuedView, len(res))
	for i, e := range res {
		out[i] = enqueuedView{Key: e.Key, Inserted: e.Inserted}
		if e.ID != 0 {
			out[i].ID = &e.ID
		}
		if e.Inserted {
			inserted++
		}
	}
	return out, inserted
}

// trigger runs schedule.Trigger, as -trigger and the dashboard do. The
// key, from the body or an Idempotency-Key header, makes it idempotent:
// the same key again answers 200 with the first trigger's jobs.
func (a *API) trigger(r *http.Request, c caller) (int, any, error) {
	s, err := a.schedule(r)
	if err != nil {
		return 0, nil, err
	}
	var req triggerRequest
	if err := decodeBody(nil, r, &req); err != nil {
		return 0, nil, err
	}
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		if req.Key != "" && req.Key != h {
			return 0, nil, problemf(http.StatusBadRequest, codeIdempotencyKey, "the body's key %q and the Idempotency-Key header %q differ", req.Key, h)
		}
		req.Key = h
	}
	q := a.cfg.Queue
	opts := schedule.TriggerOptions{Item: req.Item, Key: req.Key, Now: q.Clock().Now(), TracerProvider: a.cfg.TracerProvider}
	if len(req.Payload) > 0 && string(req.Payload) != "null" {
		if err := schedule.CheckTriggerPayload(req.Payload); err != nil {
			return 0, nil, problemf(http.StatusBadRequest, codeInvalidPayload, "payload: %v", err)
		}
		opts.Payload = req.Payload
	}
	res, err := schedule.Trigger(r.Context(), q, a.cfg.ConfigFunc(), s.Name, opts)
	jobs, inserted := viewEnqueued(res)
	a.logAction(r.Context(), c, actionTrigger, err, "schedule", s.Name, "item", req.Item, "key", req.Key,
		"payload_bytes", len(opts.Payload), "enqueued", inserted)
	if err != nil {
		return 0, nil, err
	}
	status := http.StatusCreated
	if inserted == 0 {
		status = http.StatusOK
	}
	return status, map[string]any{"schedule": s.Name, "jobs": jobs}, nil
}

func (a *API) pause(r *http.Request, c caller) (int, any, error) {
	s, err := a.schedule(r)
	if err != nil {
		return 0, nil, err
	}
	if err := decodeBody(nil, r, &struct{}{}); err != nil {
		return 0, nil, err
	}
	was, err := schedule.PauseSettled(r.Context(), a.cfg.Queue, a.cfg.ConfigFunc(), s.Name)
	a.logAction(r.Context(), c, actionPause, err, "schedule", s.Name, "was_paused", was)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"schedule": s.Name, "paused": true, "was_paused": was}, nil
}

// resumeRequest is the body of POST /schedules/{name}/resume.
type resumeRequest struct {
	// SkipMissed skips every instant missed while paused (-skip-missed);
	// else catch_up decides.
	SkipMissed bool `json:"skip_missed"`
}

func (a *API) resume(r *http.Request, c caller) (int, any, error) {
	s, err := a.schedule(r)
	if err != nil {
		return 0, nil, err
	}
	var req resumeRequest
	if err := decodeBody(nil, r, &req); err != nil {
		return 0, nil, err
	}
	q := a.cfg.Queue
	res, err := schedule.ResumeSettled(r.Context(), q, a.cfg.ConfigFunc(), s.Name, q.Clock().Now(), req.SkipMissed)
	a.logAction(r.Context(), c, actionResume, err, "schedule", s.Name, "was_paused", res.WasPaused, "runs", res.Runs, "skipped", res.Skipped)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"schedule": s.Name, "paused": false, "was_paused": res.WasPaused,
		"runs": res.Runs, "skipped": res.Skipped}, nil
}

// backfillRequest is the body of POST /schedules/{name}/backfill.
type backfillRequest struct {
	From string `json:"from"` // RFC 3339
	To   string `json:"to"`   // RFC 3339, not after now
}

func (a *API) backfill(r *http.Request, c caller) (int, any, error) {
	s, err := a.schedule(r)
	if err != nil {
		return 0, nil, err
	}
	var req backfillRequest
	if err := decodeBody(nil, r, &req); err != nil {
		return 0, nil, err
	}
	from, err := time.Parse(time.RFC3339, req.From)
	if err != nil {
		return 0, nil, problemf(http.StatusBadRequest, codeBackfillRange, "from %q: want RFC 3339, such as 2026-11-23T00:00:00+01:00", req.From)
	}
	to, err := time.Parse(time.RFC3339, req.To)
	if err != nil {
		return 0, nil, problemf(http.StatusBadRequest, codeBackfillRange, "to %q: want RFC 3339, such as 2026-11-25T23:59:59+01:00", req.To)
	}
	switch now := a.cfg.Queue.Clock().Now(); {
	case to.Before(from):
		return 0, nil, problemf(http.StatusBadRequest, codeBackfillRange, "to %s is before from %s", req.To, req.From)
	case to.After(now):
		return 0, nil, problemf(http.StatusBadRequest, codeBackfillRange, "to %s is in the future: backfill is for the past", req.To)
	}
	res, err := schedule.Backfill(r.Context(), a.cfg.Queue, a.cfg.ConfigFunc(), s.Name, from, to)
	jobs, inserted := viewEnqueued(res)
	a.logAction(r.Context(), c, actionBackfill, err, "schedule", s.Name, "from", req.From, "to", req.To, "enqueued", inserted)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"schedule": s.Name, "jobs": jobs, "enqueued": inserted, "existed": len(res) - inserted}, nil
}

// jobAction runs do on the job the path names and logs it as name.
func (a *API) jobAction(r *http.Request, c caller, name string, do func(j *queue.Job) (any, error)) (int, any, error) {
	if err := decodeBody(nil, r, &struct{}{}); err != nil {
		return 0, nil, err
	}
	j, err := a.findJob(r)
	if err != nil {
		a.logAction(r.Context(), c, name, err, "job_id", r.PathValue("id"))
		return 0, nil, err
	}
	out, err := do(j)
	a.logAction(r.Context(), c, name, err, "job_id", j.ID, "schedule", j.Schedule)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// jobStateView is what an action on a job made of it.
type jobStateView struct {
	ID    int64  `json:"id"`
	State string `json:"state"`
	// Was is the job's state before; CancelRequested says a running job
	// was asked to stop, which its daemon does.
	Was             string `json:"was"`
	CancelRequested bool   `json:"cancel_requested"`
}

func (a *API) retry(r *http.Request, c caller) (int, any, error) {
	return a.jobAction(r, c, actionRetry, func(j *queue.Job) (any, error) {
		if err := a.cfg.Queue.Retry(r.Context(), j.ID); err != nil {
			if errorsIsNotFound(err) {
				return nil, problemf(http.StatusConflict, codeJobState, "job %d is %s, not dead: only a dead or discarded job can be retried", j.ID, j.State)
			}
			return nil, err
		}
		return jobStateView{ID: j.ID, State: string(queue.StatePending), Was: string(j.State)}, nil
	})
}

func (a *API) cancel(r *http.Request, c caller) (int, any, error) {
	return a.jobAction(r, c, actionCancel, func(j *queue.Job) (any, error) {
		st, err := a.cfg.Queue.RequestCancel(r.Context(), j.ID, c.by())
		if err != nil {
			return nil, err
		}
		switch st {
		case queue.StatePending, queue.StateCancelled:
			return jobStateView{ID: j.ID, State: string(queue.StateCancelled), Was: string(st)}, nil
		case queue.StateRunning:
			return jobStateView{ID: j.ID, State: string(queue.StateRunning), Was: string(st), CancelRequested: true}, nil
		}
		return nil, problemf(http.StatusConflict, codeJobState, "job %d is %s: only a pending or running job can be cancelled", j.ID, st)
	})
}

func (a *API) discard(r *http.Request, c caller) (int, any, error) {
	return a.jobAction(r, c, actionDiscard, func(j *queue.Job) (any, error) {
		d, err := a.cfg.Queue.Discard(r.Context(), queue.Discard{IDs: []int64{j.ID}, By: c.by()})
		if err != nil {
			return nil, err
		}
		if len(d.Refused) > 0 {
			return nil, problemf(http.StatusConflict, codeJobState, "job %d is %s, not dead: only a dead job can be discarded", j.ID, d.Refused[0].State)
		}
		return jobStateView{ID: j.ID, State: string(queue.StateDiscarded), Was: string(queue.StateDead)}, nil
	})
}

// ack acknowledges an open incident, as -ack and the dashboard do.
func (a *API) ack(r *http.Request, c caller) (int, any, error) {
	if err := decodeBody(nil, r, &struct{}{}); err != nil {
		return 0, nil, err
	}
	id, err := pathID(r, "an incident")
	if err != nil {
		return 0, nil, err
	}
	ctx, q := r.Context(), a.cfg.Queue
	in, acked, err := q.Acknowledge(ctx, id, c.by())
	switch {
	case errors.Is(err, store.ErrNotFound):
		err = problemf(http.StatusNotFound, codeIncidentNotFound, "no incident %d", id)
	case errors.Is(err, store.ErrIncidentResolved):
		err = problemf(http.StatusConflict, codeIncidentResolved, "incident %d is resolved: nothing to acknowledge", id)
	}
	a.logAction(ctx, c, actionAck, err, "incident", id, "acknowledged", acked)
	if err != nil {
		return 0, nil, err
	}
	silences, err := q.Silences(ctx)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"acknowledged": acked, "incident": viewIncident(in, zone(a.cfg.ConfigFunc(), in.Schedule), silences)}, nil
}
