package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// incidentView is an incident as -ack and -status print it; times are in
// its schedule's zone, acknowledgement and resolution in UTC.
type incidentView struct {
	ID            int64   `json:"id"`
	Schedule      string  `json:"schedule"`
	Kind          string  `json:"kind"`
	Open          bool    `json:"open"`
	Count         int64   `json:"count"`
	First         string  `json:"first"`
	Last          string  `json:"last"`
	Reminders     int     `json:"reminders"`
	AckedBy       *string `json:"acked_by"` // null: not acknowledged
	AckedAt       *string `json:"acked_at"`
	ResolvedAt    *string `json:"resolved_at"` // null: open
	SilencedUntil *string `json:"silenced_until"`
}

// silenceView is a silence in force.
type silenceView struct {
	Schedule string `json:"schedule"`
	Until    string `json:"until"`
	By       string `json:"by"`
	At       string `json:"at"`
}

// statusIncidents is how many incidents -status lists, open first.
const statusIncidents = 20

func (a *app) incidentView(in store.Incident, silences map[string]store.Silence) incidentView {
	loc := a.zone(in.Schedule)
	v := incidentView{ID: in.ID, Schedule: in.Schedule, Kind: string(in.Kind), Open: in.Open, Count: in.Count,
		First: rfc3339(in.FirstAt, loc), Last: rfc3339(in.LastAt, loc), Reminders: in.Reminders}
	if !in.AckedAt.IsZero() {
		v.AckedBy, v.AckedAt = ptr(in.AckedBy), ptr(rfc3339(in.AckedAt, time.UTC))
	}
	if !in.ResolvedAt.IsZero() {
		v.ResolvedAt = ptr(rfc3339(in.ResolvedAt, time.UTC))
	}
	if s, ok := silences[in.Schedule]; ok {
		v.SilencedUntil = ptr(rfc3339(s.Until, time.UTC))
	}
	return v
}

// observeIncidents sets -status's incidents, open first, and silences.
func (a *app) observeIncidents(ctx context.Context, q *queue.Client, rep *statusReport) error {
	ins, err := q.Incidents(ctx, "", statusIncidents)
	if err != nil {
		return err
	}
	silences, err := q.Silences(ctx)
	if err != nil {
		return err
	}
	rep.Incidents, rep.Silences = []incidentView{}, []silenceView{}
	for _, in := range ins {
		rep.Incidents = append(rep.Incidents, a.incidentView(in, silences))
	}
	for _, s := range silences {
		rep.Silences = append(rep.Silences, silenceView{Schedule: s.Schedule, Until: rfc3339(s.Until, time.UTC),
			By: s.By, At: rfc3339(s.At, time.UTC)})
	}
	return nil
}

// printIncidents prints -status's incidents and silences sections.
func printIncidents(w io.Writer, rep *statusReport) {
	if len(rep.Incidents) > 0 {
		fmt.Fprintf(w, "\nINCIDENT\tSTATE\tSCHEDULE\tKIND\tCOUNT\tFIRST\tLAST\tACKNOWLEDGED BY\tSILENCED UNTIL\n")
	}
	for _, in := range rep.Incidents {
		state := "open"
		if !in.Open {
			state = "resolved " + *in.ResolvedAt
		}
		acked := "-"
		if in.AckedBy != nil {
			acked = *in.AckedBy + " at " + *in.AckedAt
		}
		silenced := "-"
		if in.SilencedUntil != nil {
			silenced = *in.SilencedUntil
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", in.ID, state, in.Schedule, in.Kind, in.Count, in.First, in.Last, acked, silenced)
	}
	if len(rep.Silences) > 0 {
		fmt.Fprintf(w, "\nSILENCED\tUNTIL\tBY\n")
	}
	for _, s := range rep.Silences {
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.Schedule, s.Until, s.By)
	}
}

// ackIncident is -ack: the open incident ID acknowledged, which stops its
// reminders.
func (a *app) ackIncident(ctx context.Context) error {
	id, err := strconv.ParseInt(a.o.ack, 10, 64)
	if err != nil || id < 1 {
		return usagef("-ack %q: want an incident's id (see -status)", a.o.ack)
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	in, acked, err := q.Acknowledge(ctx, id, operatorName("ack"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("no incident %d (see -status for the incidents)", id)
	case errors.Is(err, store.ErrIncidentResolved):
		return fmt.Errorf("incident %d is resolved: nothing to acknowledge", id)
	case err != nil:
		return err
	}
	silences, err := q.Silences(ctx)
	if err != nil {
		return err
	}
	v := a.incidentView(in, silences)
	if a.o.json {
		return writeJSON(a.stdout, v)
	}
	if !acked {
		fmt.Fprintf(a.stdout, "incident %d (%s %s) was already acknowledged by %s at %s: nothing to do\n", in.ID, in.Schedule, in.Kind, *v.AckedBy, *v.AckedAt)
		return nil
	}
	fmt.Fprintf(a.stdout, "acknowledged incident %d (%s %s, %d occurrences since %s): no more reminders\n", in.ID, in.Schedule, in.Kind, in.Count, v.First)
	return nil
}

// silenceSchedule is -silence NAME -for D, and -unsilence NAME (until
// zero).
func (a *app) silenceSchedule(ctx context.Context, name string, d time.Duration) error {
	if _, err := a.schedule(name); err != nil {
		return err
	}
	q, err := a.openQueue(ctx, true)
	if err != nil {
		return err
	}
	defer q.Close()
	before, err := q.Silences(ctx)
	if err != nil {
		return err
	}
	var until time.Time
	if d > 0 {
		until = q.Clock().Now().Add(d).Truncate(time.Millisecond)
	}
	if err := q.Silence(ctx, name, until, operatorName(a.o.mode)); err != nil {
		return err
	}
	_, was := before[name]
	if a.o.json {
		out := struct {
			Schedule string  `json:"schedule"`
			Until    *string `json:"until"` // null: not silenced
			Was      bool    `json:"was_silenced"`
		}{Schedule: name, Was: was}
		if d > 0 {
			out.Until = ptr(rfc3339(until, time.UTC))
		}
		return writeJSON(a.stdout, out)
	}
	switch {
	case d > 0:
		fmt.Fprintf(a.stdout, "silenced %s until %s: its incidents are recorded but notify nobody (lift with -unsilence %s)\n", name, rfc3339(until, time.UTC), name)
	case was:
		fmt.Fprintf(a.stdout, "%s is no longer silenced\n", name)
	default:
		fmt.Fprintf(a.stdout, "%s was not silenced: nothing to do\n", name)
	}
	return nil
}

// operatorName names the operator of command mode, for the records:
// user@host (scheduler -MODE, pid N).
func operatorName(mode string) string {
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s (scheduler -%s, pid %d)", name, host, mode, os.Getpid())
}
