package alarm

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// incidentPlan is what an evaluation asks of the open incidents: the
// successes that may resolve them, the reminders due, and the schedules'
// newest successes for the payloads.
type incidentPlan struct {
	successes   map[string]time.Time
	reminders   []store.Reminder
	lastSuccess map[string]time.Time
	waits       bool // a resolution waits for a notification to end
}

// planIncidents reads the open incidents and plans their resolutions and
// reminders at now, noting in j when the next reminder falls due. The
// schedules of props get their success too, so that an incident opened by
// the same batch resolves at once if a newer run already succeeded.
func (e *Evaluator) planIncidents(ctx context.Context, cfg *config.Config, j *judgement) (incidentPlan, error) {
	p := incidentPlan{successes: map[string]time.Time{}, lastSuccess: map[string]time.Time{}}
	open, err := e.q.OpenIncidents(ctx, store.MaxAlarmRows)
	if err != nil {
		return p, err
	}
	for _, pr := range j.props {
		if pr.a.Kind == store.AlarmRecovered {
			// The alarm's job succeeded now, maybe older than the newest
			// success: it resolves what it follows.
			p.successes[pr.a.Schedule] = later(p.successes[pr.a.Schedule], pr.succeeded)
		}
		if err := p.readSuccess(ctx, e.q, pr.a.Schedule); err != nil {
			return p, err
		}
	}
	for _, in := range open {
		e.markAlarmed(in.Schedule)
		if err := p.readSuccess(ctx, e.q, in.Schedule); err != nil {
			return p, err
		}
		success := later(p.lastSuccess[in.Schedule], p.successes[in.Schedule])
		if !success.IsZero() && !success.Before(in.LastAt) {
			p.waits = p.waits || in.Notifying
			continue // resolved now, or once its notice ended
		}
		s, _ := scheduleOf(cfg, in.Schedule)
		if s == nil || s.Renotify <= 0 || !in.AckedAt.IsZero() || len(s.Notify) == 0 {
			continue
		}
		if due := in.NotifiedAt.Add(s.Renotify); due.After(j.now) {
			j.wakeAt(due)
		} else {
			p.reminders = append(p.reminders, store.Reminder{ID: in.ID, Reminders: in.Reminders})
		}
	}
	for name, at := range p.successes {
		if at.IsZero() || !p.resolves(name, open, j.props) {
			delete(p.successes, name)
		}
	}
	return p, nil
}

// wakeForReminders notes in j the first reminders of the incidents out
// opened or reminded.
func wakeForReminders(cfg *config.Config, j *judgement, out store.AlarmOutcome) {
	for _, n := range out.Notices {
		s, ok := scheduleOf(cfg, n.Incident.Schedule)
		if ok && n.Kind != store.NoticeResolved && s.Renotify > 0 {
			j.wakeAt(n.Incident.NotifiedAt.Add(s.Renotify))
		}
	}
}

// readSuccess reads schedule's newest success once, into successes too.
func (p *incidentPlan) readSuccess(ctx context.Context, q *queue.Client, schedule string) error {
	if _, ok := p.lastSuccess[schedule]; ok {
		return nil
	}
	at, err := q.LastSuccess(ctx, schedule)
	if err != nil {
		return err
	}
	p.lastSuccess[schedule] = at
	p.successes[schedule] = later(p.successes[schedule], at)
	return nil
}

// resolves reports whether schedule's success may resolve something now:
// an open incident older than it whose notices ended, or one props open.
func (p *incidentPlan) resolves(schedule string, open []store.Incident, props []proposed) bool {
	at := p.successes[schedule]
	for _, in := range open {
		if in.Schedule == schedule && !at.Before(in.LastAt) && !in.Notifying {
			return true
		}
	}
	for _, pr := range props {
		if pr.a.Schedule == schedule && store.GroupsIntoIncident(pr.a.Kind) && !at.Before(pr.a.At) {
			return true
		}
	}
	return false
}

// noticeFunc returns the notification jobs of a notice: one per notify
// task of its schedule, the payload the opening alarm's with the
// incident's fields.
func noticeFunc(cfg *config.Config, lastSuccess map[string]time.Time) func(store.Notice) ([]store.NewJob, error) {
	return func(n store.Notice) ([]store.NewJob, error) {
		s, ok := scheduleOf(cfg, n.Incident.Schedule)
		if !ok || len(s.Notify) == 0 {
			return nil, nil
		}
		var p config.AlarmPayload
		if n.Alarm != nil && len(n.Alarm.Detail) > 0 {
			if err := json.Unmarshal(n.Alarm.Detail, &p); err != nil {
				return nil, fmt.Errorf("alarm %s: %w", n.Alarm.Key, err)
			}
		}
		in := n.Incident
		p.Schedule, p.Kind, p.IncidentKind = in.Schedule, string(in.Kind), string(in.Kind)
		if n.Kind == store.NoticeResolved {
			p.Kind = string(store.AlarmRecovered)
		}
		p.Incident, p.Notice, p.Count = in.ID, string(n.Kind), in.Count
		p.First, p.Last = inZone(in.FirstAt, s.Location), inZone(in.LastAt, s.Location)
		if at := lastSuccess[in.Schedule]; !at.IsZero() {
			p.LastSuccess = inZone(at, s.Location)
		}
		payload, err := json.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("incident %d: %w", in.ID, err)
		}
		var jobs []store.NewJob
		for _, name := range s.Notify {
			if task := cfg.Tasks[name]; task != nil {
				jobs = append(jobs, queue.NewJob{Type: name, Payload: payload, Priority: task.Priority,
					MaxAttempts: task.MaxAttempts, Version: task.Version})
			}
		}
		return jobs, nil
	}
}

// logOutcome logs what a commit did: a new incident at ERROR (WARN when
// late), a further occurrence at DEBUG, recoveries, reminders and
// resolutions at INFO.
func (e *Evaluator) logOutcome(ctx context.Context, cfg *config.Config, out store.AlarmOutcome) {
	for _, a := range out.Raised {
		if a.Kind == store.AlarmRecovered {
			e.log.InfoContext(ctx, "alarm recovered", logKeySchedule, a.Schedule, logKeyItem, a.Item,
				logKeyInstant, instantOf(cfg, a), logKeyJobID, a.JobID)
		}
	}
	for _, o := range out.Occurrences {
		a, in := o.Alarm, o.Incident
		if !o.Opened {
			e.log.DebugContext(ctx, "incident occurrence counted", logKeySchedule, a.Schedule, logKeyKind, string(a.Kind),
				logKeyIncident, in.ID, logKeyCount, in.Count, logKeyItem, a.Item, logKeyInstant, instantOf(cfg, a), logKeyJobID, a.JobID)
			continue
		}
		level := slog.LevelError
		if a.Kind == store.AlarmLate {
			level = slog.LevelWarn
		}
		e.log.Log(ctx, level, "incident opened", logKeySchedule, a.Schedule, logKeyKind, string(a.Kind), logKeyIncident, in.ID,
			logKeyItem, a.Item, logKeyInstant, instantOf(cfg, a), logKeyJobID, a.JobID, logKeyError, a.Error)
	}
	for _, n := range out.Notices {
		in := n.Incident
		switch {
		case n.Silenced:
			e.log.InfoContext(ctx, "incident notice silenced", logKeySchedule, in.Schedule, logKeyKind, string(in.Kind),
				logKeyIncident, in.ID, logKeyNotice, string(n.Kind))
		case n.Kind == store.NoticeReminder:
			e.log.InfoContext(ctx, "incident reminder sent", logKeySchedule, in.Schedule, logKeyKind, string(in.Kind),
				logKeyIncident, in.ID, logKeyCount, in.Count, logKeyReminder, in.Reminders)
		}
		if n.Kind == store.NoticeResolved {
			e.log.InfoContext(ctx, "incident resolved", logKeySchedule, in.Schedule, logKeyKind, string(in.Kind),
				logKeyIncident, in.ID, logKeyCount, in.Count)
		}
	}
}

// instantOf is a's instant in its schedule's zone, or "".
func instantOf(cfg *config.Config, a store.Alarm) string {
	loc := time.UTC
	if s, ok := scheduleOf(cfg, a.Schedule); ok {
		loc = s.Location
	}
	return inZone(a.ScheduledAt, loc)
}
