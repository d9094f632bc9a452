package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/alarm"
)

// alarmView is an alarm, its instant in its schedule's zone.
type alarmView struct {
	ID       int64           `json:"id"`
	Schedule string          `json:"schedule"`
	Item     string          `json:"item"`
	Instant  string          `json:"instant"` // "-" for a manual run's job
	Kind     string          `json:"kind"`
	JobID    int64           `json:"job_id"`
	Error    string          `json:"error"`
	Open     bool            `json:"open"`
	RaisedAt string          `json:"raised_at"`
	Detail   json.RawMessage `json:"detail"`
	// DetailError says why Detail is a marker (see payloadView).
	DetailError string `json:"detail_error,omitempty"`
}

// listAlarms is -alarms: the newest alarms, of one schedule or all.
func (a *app) listAlarms(ctx context.Context) error {
	q, err := a.openQueue(ctx, false)
	if err != nil {
		return err
	}
	defer q.Close()
	alarms, err := q.Alarms(ctx, a.o.sched, a.o.limit)
	if err != nil {
		return err
	}
	views := make([]alarmView, 0, len(alarms))
	for _, al := range alarms {
		detail, detailErr := payloadView(nil, al.Detail)
		views = append(views, alarmView{ID: al.ID, Schedule: al.Schedule, Item: al.Item,
			Instant: rfc3339(al.ScheduledAt, a.zone(al.Schedule)), Kind: string(al.Kind), JobID: al.JobID,
			Error: al.Error, Open: al.Open, RaisedAt: rfc3339(al.RaisedAt, time.UTC), Detail: detail, DetailError: detailErr})
	}
	if a.o.json {
		return writeJSON(a.stdout, views)
	}
	if len(views) == 0 {
		if a.o.sched != "" {
			fmt.Fprintf(a.stdout, "no alarms of %s are kept\n", a.o.sched)
		} else {
			fmt.Fprintln(a.stdout, "no alarms are kept")
		}
		return nil
	}
	w := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "RAISED\tSCHEDULE\tITEM\tINSTANT\tKIND\tJOB\tERROR\n")
	for _, v := range views {
		job := "-"
		if v.JobID != 0 {
			job = fmt.Sprint(v.JobID)
		}
		kind := v.Kind
		if v.Open {
			kind += " (open)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", v.RaisedAt, v.Schedule, orDash(v.Item), v.Instant, kind, job,
			orDash(firstLine(v.Error, 60)))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if len(views) == a.o.limit {
		fmt.Fprintf(a.stdout, "%d newest shown; more may be kept (raise -limit, up to %d)\n", len(views), queue.MaxList)
	}
	return nil
}

// lastAlarmView is a schedule's newest alarm in -status.
type lastAlarmView struct {
	Kind     string `json:"kind"`
	Item     string `json:"item"`
	Instant  string `json:"instant"`
	RaisedAt string `json:"raised_at"`
}

// observeDeadline sets a schedule's deadline state by alarm.ReadDeadline,
// the rule the metrics and the dashboard follow too.
func (a *app) observeDeadline(ctx context.Context, q *queue.Client, ss *scheduleStatus) error {
	if a.cfg == nil {
		return nil
	}
	s, ok := a.cfg.Schedule(ss.Name)
	if !ok {
		return nil
	}
	var lastRun time.Time
	if ss.last != nil {
		lastRun = ss.last.ScheduledAt
	}
	state, alarms, err := alarm.ReadDeadline(ctx, q, s, lastRun)
	if err != nil || state == alarm.DeadlineNone {
		return err
	}
	if len(alarms) > 0 {
		al := alarms[0]
		ss.LastAlarm = &lastAlarmView{Kind: string(al.Kind), Item: al.Item, Instant: rfc3339(al.ScheduledAt, s.Location),
			RaisedAt: rfc3339(al.RaisedAt, time.UTC)}
	}
	ss.DeadlineState = string(state)
	return nil
}

// printDeadlines prints -status's deadline section.
func printDeadlines(w io.Writer, rep *statusReport) {
	header := false
	for _, s := range rep.Schedules {
		if s.DeadlineState == "" {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\nSCHEDULE\tDEADLINE STATE\tLAST ALARM\tITEM\tINSTANT\tRAISED\n")
			header = true
		}
		if s.LastAlarm == nil {
			fmt.Fprintf(w, "%s\t%s\t-\t-\t-\t-\n", s.Name, s.DeadlineState)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.DeadlineState, s.LastAlarm.Kind, orDash(s.LastAlarm.Item),
			s.LastAlarm.Instant, s.LastAlarm.RaisedAt)
	}
}
