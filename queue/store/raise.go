package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RaiseAlarms implements AlarmProtocol.RaiseAlarms: CommitAlarms' raised
// alarms.
func (e *Base) RaiseAlarms(ctx context.Context, b AlarmBatch) ([]Alarm, error) {
	out, err := e.CommitAlarms(ctx, b)
	return out.Raised, err
}

// CommitAlarms implements AlarmProtocol.CommitAlarms. Its commit need not
// survive power loss: the alarms are lost with the marks that passed them,
// and the next evaluation raises them again; a reminder or resolution lost
// is due again at the next.
func (e *Base) CommitAlarms(ctx context.Context, b AlarmBatch) (AlarmOutcome, error) {
	now := e.clock.Now()
	alarms, err := PrepareAlarms(b.Alarms, now)
	if err != nil {
		return AlarmOutcome{}, err
	}
	var out AlarmOutcome
	notified := false
	err = e.b.InTx(ctx, false, func(tx Tx) error {
		out, notified = AlarmOutcome{}, false
		c := &alarmCommit{e: e, tx: tx, b: b, now: now, out: &out}
		for _, a := range alarms {
			if err := c.raise(ctx, a); err != nil {
				return err
			}
		}
		for _, m := range b.Marks {
			if _, err := tx.Exec(ctx, e.q.MoveMark, m.Schedule, m.Late, m.Missed, m.Misfire, m.Dead, now); err != nil {
				return fmt.Errorf("move alarm marks of %s: %w", m.Schedule, err)
			}
		}
		// Resolutions first: a resolved incident gets no reminder.
		if err := c.resolve(ctx); err != nil {
			return err
		}
		if err := c.remind(ctx); err != nil {
			return err
		}
		notified = c.notified
		return nil
	})
	if err != nil {
		return AlarmOutcome{}, fmt.Errorf("raise alarms: %w", err)
	}
	if notified {
		Wake(e)
	}
	return out, nil
}

// alarmCommit is one transaction of CommitAlarms.
type alarmCommit struct {
	e        *Base
	tx       Tx
	b        AlarmBatch
	now      time.Time
	out      *AlarmOutcome
	notified bool // a notification job was inserted
}

// raise inserts a unless its key exists; if inserted, it enqueues a's own
// notifications and counts a on its incident. It closes what a resolves.
func (c *alarmCommit) raise(ctx context.Context, a NewAlarm) error {
	e, tx := c.e, c.tx
	errText := e.capText(a.Error)
	var id int64
	err := tx.QueryRow(ctx, e.q.InsertAlarm, a.Key, a.Schedule, a.Item, OrNull(a.ScheduledAt), string(a.Kind),
		a.JobID, errText, string(a.Detail), OpensAlarm(a.Kind), c.now).Scan(&id)
	switch {
	case errors.Is(err, ErrNoRows):
		// Raised before, by any process.
	case err != nil:
		return fmt.Errorf("insert alarm %s: %w", a.Key, err)
	default:
		raised := Alarm{ID: id, Key: a.Key, Schedule: a.Schedule, Item: a.Item,
			ScheduledAt: a.ScheduledAt, Kind: a.Kind, JobID: a.JobID, Error: errText, Detail: a.Detail,
			Open: OpensAlarm(a.Kind), RaisedAt: c.now.Truncate(time.Millisecond).UTC()}
		c.out.Raised = append(c.out.Raised, raised)
		res, err := e.b.InsertJobs(ctx, tx, a.Notify, c.now)
		if err != nil {
			return fmt.Errorf("notify alarm %s: %w", a.Key, err)
		}
		c.notified = c.notified || Inserted(res)
		if GroupsIntoIncident(a.Kind) && e.q.Incidents.CountIncident != "" {
			if err := c.count(ctx, a, raised); err != nil {
				return err
			}
		}
	}
	if len(a.Resolves) > 0 {
		if _, err := tx.Exec(ctx, e.q.CloseAlarms, a.Resolves); err != nil {
			return fmt.Errorf("close alarms: %w", err)
		}
	}
	return nil
}

// count counts the new alarm a on its schedule's open incident of its kind,
// opening one, with its first notice, if none is.
func (c *alarmCommit) count(ctx context.Context, a NewAlarm, raised Alarm) error {
	q := &c.e.q.Incidents
	at := a.At
	if at.IsZero() {
		at = c.now
	}
	in, err := ScanIncident(c.tx.QueryRow(ctx, q.CountIncident, a.Schedule, string(a.Kind), at, c.now))
	if err != nil {
		return fmt.Errorf("count alarm %s on its incident: %w", a.Key, err)
	}
	if _, err := c.tx.Exec(ctx, q.TagAlarm, in.ID, raised.ID); err != nil {
		return fmt.Errorf("tag alarm %s: %w", a.Key, err)
	}
	opened := in.Count == 1
	c.out.Occurrences = append(c.out.Occurrences, Occurrence{Alarm: raised, Incident: in, Opened: opened})
	if !opened {
		return nil
	}
	return c.notify(ctx, Notice{Kind: NoticeFirst, Incident: in, Alarm: &a})
}

// remind sends the reminders due, each once: the compare-and-set on the
// incident's reminders picks one engine.
func (c *alarmCommit) remind(ctx context.Context) error {
	for _, r := range c.b.Reminders {
		in, err := ScanIncident(c.tx.QueryRow(ctx, c.e.q.Incidents.Remind, c.now, r.ID, r.Reminders))
		switch {
		case errors.Is(err, ErrNoRows):
			continue // sent by another engine, acknowledged or resolved
		case err != nil:
			return fmt.Errorf("remind of incident %d: %w", r.ID, err)
		}
		if err := c.notify(ctx, Notice{Kind: NoticeReminder, Incident: in}); err != nil {
			return err
		}
	}
	return nil
}

// resolve resolves the incidents the successes resolve, each once, and
// notes those that wait for their notifications.
func (c *alarmCommit) resolve(ctx context.Context) error {
	q := &c.e.q.Incidents
	for schedule, at := range c.b.Successes {
		if at.IsZero() || q.Resolve == "" {
			continue
		}
		resolved, err := Collect(Read(c.tx.Query(ctx, q.Resolve, c.now, schedule, at)), ScanIncident)
		if err != nil {
			return fmt.Errorf("resolve incidents of %s: %w", schedule, err)
		}
		for _, in := range resolved {
			if err := c.notify(ctx, Notice{Kind: NoticeResolved, Incident: in}); err != nil {
				return err
			}
		}
		var waiting int64
		if err := c.tx.QueryRow(ctx, q.Waiting, schedule, at).Scan(&waiting); err != nil {
			return fmt.Errorf("read incidents of %s: %w", schedule, err)
		}
		c.out.Waiting = c.out.Waiting || waiting > 0
	}
	return nil
}

// notify enqueues n's notification jobs, unless its schedule is silenced.
func (c *alarmCommit) notify(ctx context.Context, n Notice) error {
	var until Time
	err := c.tx.QueryRow(ctx, c.e.q.Incidents.Silenced, n.Incident.Schedule, c.now).Scan(&until)
	switch {
	case err == nil:
		n.Silenced = true
	case !errors.Is(err, ErrNoRows):
		return fmt.Errorf("read silence of %s: %w", n.Incident.Schedule, err)
	}
	c.out.Notices = append(c.out.Notices, n)
	if n.Silenced || c.b.NoticeFunc == nil {
		return nil
	}
	jobs, err := c.b.NoticeFunc(n)
	if err != nil {
		return fmt.Errorf("notice of incident %d: %w", n.Incident.ID, err)
	}
	key := noticeKey(n)
	for i := range jobs {
		jobs[i].Key, jobs[i].AlarmKey = NotifyKey(key, jobs[i].Type), IncidentKey(n.Incident.ID)
	}
	jobs, err = PrepareJobs(jobs, c.now)
	if err != nil {
		return fmt.Errorf("notice of incident %d: %w", n.Incident.ID, err)
	}
	res, err := c.e.b.InsertJobs(ctx, c.tx, jobs, c.now)
	if err != nil {
		return fmt.Errorf("notify incident %d: %w", n.Incident.ID, err)
	}
	c.notified = c.notified || Inserted(res)
	return nil
}

// Inserted reports whether one of res inserted a job.
func Inserted(res []Enqueued) bool {
	for _, r := range res {
		if r.Inserted {
			return true
		}
	}
	return false
}
