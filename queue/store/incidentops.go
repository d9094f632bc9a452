package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The incidents' reads and the operator's writes on them, on every engine.

// OpenIncidents implements AlarmProtocol.OpenIncidents.
func (e *Base) OpenIncidents(ctx context.Context, limit int) ([]Incident, error) {
	if e.q.Incidents.OpenIncidents == "" {
		return nil, nil
	}
	out, err := Collect(e.read(ctx, e.q.Incidents.OpenIncidents, alarmRows(limit)), ScanOpenIncident)
	if err != nil {
		return nil, fmt.Errorf("read open incidents: %w", err)
	}
	return out, nil
}

// Incidents implements IncidentOperator.Incidents.
func (e *Base) Incidents(ctx context.Context, schedule string, limit int) ([]Incident, error) {
	if err := CheckLimit("list incidents", limit); err != nil {
		return nil, err
	}
	query, args := e.q.Incidents.IncidentsAll, []any{limit}
	if schedule != "" {
		query, args = e.q.Incidents.IncidentsOf, []any{schedule, limit}
	}
	if query == "" {
		return nil, nil
	}
	out, err := Collect(e.read(ctx, query, args...), ScanIncident)
	if err != nil {
		return nil, fmt.Errorf("list incidents: %w", err)
	}
	return out, nil
}

// Incident implements IncidentOperator.Incident.
func (e *Base) Incident(ctx context.Context, id int64) (Incident, error) {
	if e.q.Incidents.IncidentByID == "" {
		return Incident{}, fmt.Errorf("incident %d: %w", id, ErrNotFound)
	}
	in, err := ScanIncident(e.b.Reader().QueryRow(ctx, e.q.Incidents.IncidentByID, id))
	switch {
	case errors.Is(err, ErrNoRows):
		return in, fmt.Errorf("incident %d: %w", id, ErrNotFound)
	case err != nil:
		return in, fmt.Errorf("read incident %d: %w", id, err)
	}
	return in, nil
}

// Acknowledge implements IncidentOperator.Acknowledge.
func (e *Base) Acknowledge(ctx context.Context, id int64, by string) (Incident, bool, error) {
	if by == "" {
		return Incident{}, false, errors.New("acknowledge: empty name")
	}
	var in Incident
	acked := false
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		var err error
		in, err = ScanIncident(tx.QueryRow(ctx, e.q.Incidents.Acknowledge, e.clock.Now(), by, id))
		if acked = err == nil; acked || !errors.Is(err, ErrNoRows) {
			return err
		}
		in, err = ScanIncident(tx.QueryRow(ctx, e.q.Incidents.IncidentByID, id))
		switch {
		case errors.Is(err, ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		case !in.Open:
			return ErrIncidentResolved
		}
		return nil // acknowledged before
	})
	if err != nil {
		return Incident{}, false, fmt.Errorf("acknowledge incident %d: %w", id, err)
	}
	return in, acked, nil
}

// Silence implements IncidentOperator.Silence.
func (e *Base) Silence(ctx context.Context, schedule string, until time.Time, by string) error {
	if schedule == "" || by == "" {
		return errors.New("silence: empty schedule or name")
	}
	err := e.b.InTx(ctx, true, func(tx Tx) error {
		if until.IsZero() {
			_, err := tx.Exec(ctx, e.q.Incidents.Unsilence, schedule)
			return err
		}
		_, err := tx.Exec(ctx, e.q.Incidents.SetSilence, schedule, until, by, e.clock.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("silence %s: %w", schedule, err)
	}
	return nil
}

// Silences implements IncidentOperator.Silences.
func (e *Base) Silences(ctx context.Context) (map[string]Silence, error) {
	if e.q.Incidents.Silences == "" {
		return nil, nil
	}
	ss, err := Collect(e.read(ctx, e.q.Incidents.Silences, e.clock.Now()), ScanSilence)
	if err != nil {
		return nil, fmt.Errorf("read silences: %w", err)
	}
	out := make(map[string]Silence, len(ss))
	for _, s := range ss {
		out[s.Schedule] = s
	}
	return out, nil
}
