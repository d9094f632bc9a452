package alarm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// raise commits the alarms with their notifications and the moved marks
// in one transaction, and returns those it raised. It remembers the
// batch's alarms, even those another process raised: a dead one is not
// proposed again, and an open one makes its recovering success call for
// an evaluation.
func (e *Evaluator) raise(ctx context.Context, cfg *config.Config, now time.Time, props []proposed, marks []store.AlarmMark) ([]store.Alarm, error) {
	batch, err := e.batch(ctx, cfg, props, marks)
	if err != nil {
		return nil, err
	}
	raised, err := e.q.RaiseAlarms(ctx, batch)
	if err != nil {
		e.marks = nil // read them again
		return nil, err
	}
	for _, m := range marks {
		e.marks[m.Schedule] = m
	}
	for _, a := range batch.Alarms {
		if a.Kind == store.AlarmDead {
			e.deadSeen[a.Key] = now
		}
		if store.OpensAlarm(a.Kind) {
			e.markAlarmed(a.Schedule)
		}
	}
	return raised, nil
}

// batch fills the payloads and notification jobs of props.
func (e *Evaluator) batch(ctx context.Context, cfg *config.Config, props []proposed, marks []store.AlarmMark) (store.AlarmBatch, error) {
	batch := store.AlarmBatch{Marks: marks}
	lastSuccess := map[string]time.Time{}
	for _, p := range props {
		name := p.a.Schedule
		if _, ok := lastSuccess[name]; !ok {
			at, err := e.q.LastSuccess(ctx, name)
			if err != nil {
				return batch, err
			}
			lastSuccess[name] = at
		}
		loc := time.UTC
		if p.s != nil {
			loc = p.s.Location
		}
		a := p.a
		a.Key = alarmKey(a)
		payload := config.AlarmPayload{Schedule: name, Item: a.Item, Instant: inZone(a.ScheduledAt, loc), Kind: string(a.Kind),
			Deadline: inZone(p.limit, loc), LastSuccess: inZone(lastSuccess[name], loc), JobID: a.JobID,
			LastError: a.Error, Skipped: p.skips}
		detail, err := json.Marshal(payload)
		if err != nil {
			return batch, fmt.Errorf("alarm %s: %w", a.Key, err)
		}
		a.Detail = detail
		if p.s != nil {
			for _, name := range p.s.Notify {
				task := cfg.Tasks[name]
				if task == nil {
					continue // not in the config
				}
				a.Notify = append(a.Notify, notificationJob(a.Key, name, task, detail))
			}
		}
		batch.Alarms = append(batch.Alarms, a)
	}
	return batch, nil
}

// notificationJob carries alarm alarmKey's detail to notify task name.
func notificationJob(alarmKey, name string, task *config.Task, detail json.RawMessage) queue.NewJob {
	return queue.NewJob{Key: store.NotifyKey(alarmKey, name), AlarmKey: alarmKey, Type: name, Payload: detail,
		Priority: task.Priority, MaxAttempts: task.MaxAttempts, Version: task.Version}
}

func alarmKey(a store.NewAlarm) string {
	return store.AlarmKey(a.Schedule, a.Item, a.ScheduledAt, a.JobID, a.Kind)
}

// inZone formats t in RFC 3339 in loc; the zero time is "".
func inZone(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format(time.RFC3339)
}
