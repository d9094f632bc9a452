package alarm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// raise commits the alarms, the moved marks and the incidents' counts,
// reminders and resolutions with their notifications in one transaction,
// and returns what it did. It remembers the batch's alarms, even those
// another process raised: a dead or upstream one is not proposed again, and an open
// one makes its recovering success call for an evaluation.
func (e *Evaluator) raise(ctx context.Context, cfg *config.Config, now time.Time, props []proposed, marks []store.AlarmMark, plan incidentPlan) (store.AlarmOutcome, error) {
	batch, err := e.batch(props, marks, plan)
	if err != nil {
		return store.AlarmOutcome{}, err
	}
	batch.NoticeFunc = noticeFunc(cfg, plan.lastSuccess)
	out, err := e.q.CommitAlarms(ctx, batch)
	if err != nil {
		e.marks = nil // read them again
		return out, err
	}
	for _, m := range marks {
		e.marks[m.Schedule] = m
	}
	for _, a := range batch.Alarms {
		if a.Kind == store.AlarmDead || a.Kind == store.AlarmUpstream {
			e.seen[a.Key] = now
		}
		if store.OpensAlarm(a.Kind) || store.GroupsIntoIncident(a.Kind) {
			e.markAlarmed(a.Schedule)
		}
	}
	return out, nil
}

// batch fills the alarms' details: each is the payload of the incident's
// first notice should it open one (see noticeFunc).
func (e *Evaluator) batch(props []proposed, marks []store.AlarmMark, plan incidentPlan) (store.AlarmBatch, error) {
	batch := store.AlarmBatch{Marks: marks, Reminders: plan.reminders, Successes: plan.successes}
	for _, p := range props {
		name := p.a.Schedule
		loc := time.UTC
		if p.s != nil {
			loc = p.s.Location
		}
		a := p.a
		a.Key = alarmKey(a)
		payload := config.AlarmPayload{Schedule: name, Item: a.Item, Instant: inZone(a.ScheduledAt, loc), Kind: string(a.Kind),
			Deadline: inZone(p.limit, loc), LastSuccess: inZone(plan.lastSuccess[name], loc), JobID: a.JobID,
			LastError: a.Error, Skipped: p.skips}
		detail, err := json.Marshal(payload)
		if err != nil {
			return batch, fmt.Errorf("alarm %s: %w", a.Key, err)
		}
		a.Detail = detail
		batch.Alarms = append(batch.Alarms, a)
	}
	return batch, nil
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
