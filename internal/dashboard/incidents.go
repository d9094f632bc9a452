package dashboard

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/scheduler-run/scheduler/queue/store"
)

// incidentRow is one incident on /alarms.
type incidentRow struct {
	ID            int64
	Kind          string
	Schedule      string
	Open          bool
	Count         int64
	First, Last   When
	Reminders     int
	AckedBy       string // empty: not acknowledged
	AckedAt       When
	Resolved      When
	SilencedUntil When     // zero: not silenced
	Notified      []jobRow // its notification jobs, newest first
}

// incidentRows reads the newest incidents, open first, of schedule or all.
func (s *server) incidentRows(ctx context.Context, schedule string) ([]incidentRow, error) {
	ins, err := s.q.Incidents(ctx, schedule, AlarmsPage)
	if err != nil {
		return nil, err
	}
	silences, err := s.q.Silences(ctx)
	if err != nil {
		return nil, err
	}
	var rows []incidentRow
	for _, in := range ins {
		loc := s.zone(in.Schedule)
		row := incidentRow{ID: in.ID, Kind: string(in.Kind), Schedule: in.Schedule, Open: in.Open, Count: in.Count,
			First: s.when(in.FirstAt, loc), Last: s.when(in.LastAt, loc), Reminders: in.Reminders, AckedBy: in.AckedBy,
			AckedAt: s.when(in.AckedAt, loc), Resolved: s.when(in.ResolvedAt, loc)}
		if sl, ok := silences[in.Schedule]; ok {
			row.SilencedUntil = s.when(sl.Until, loc)
		}
		// One key index range: the notices' keys start with the incident's.
		if row.Notified, err = s.notifications(ctx, store.NoticeKeyPrefix(in.ID), loc); err != nil {
			return nil, fmt.Errorf("notifications of incident %d: %w", in.ID, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// AckForm acknowledges an open incident not yet acknowledged; nil when
// the session may not act.
func (s Session) AckForm(id int64, open bool, ackedBy string) *Form {
	if !s.Actions || !open || ackedBy != "" {
		return nil
	}
	f := s.form(ActionAck, "Acknowledge", fmt.Sprintf("acknowledge incident %d: its reminders stop", id))
	f.Incident = id
	return &f
}

// ackIncident acknowledges incident ref on behalf of who at addr.
func (x *Actions) ackIncident(ctx context.Context, ref, who, addr string) (string, error) {
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil || id <= 0 {
		return "", fmt.Errorf("acknowledge: %q is not an incident id", ref)
	}
	in, acked, err := x.cfg.Queue.Acknowledge(ctx, id, fmt.Sprintf("%s (dashboard, from %s)", who, addr))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", fmt.Errorf("no incident %d", id)
	case errors.Is(err, store.ErrIncidentResolved):
		return "", fmt.Errorf("incident %d is resolved: nothing to acknowledge", id)
	case err != nil:
		return "", fmt.Errorf("acknowledge incident %d: %w", id, err)
	case !acked:
		return fmt.Sprintf("Incident %d was already acknowledged by %s.", id, in.AckedBy), nil
	}
	return fmt.Sprintf("Incident %d (%s %s) acknowledged: no more reminders.", id, in.Schedule, in.Kind), nil
}
