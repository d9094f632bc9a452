package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// RaiseAlarms implements AlarmProtocol.RaiseAlarms. Its commit need not
// survive power loss: the alarms are lost with the marks that passed them,
// and the next evaluation raises them again.
func (e *Base) RaiseAlarms(ctx context.Context, b AlarmBatch) ([]Alarm, error) {
	now := e.clock.Now()
	alarms, err := PrepareAlarms(b.Alarms, now)
	if err != nil {
		return nil, err
	}
	var raised []Alarm
	notified := false
	err = e.b.InTx(ctx, false, func(tx Tx) error {
		raised, notified = raised[:0], false
		for _, a := range alarms {
			r, n, err := e.raise(ctx, tx, a, now)
			if err != nil {
				return err
			}
			raised, notified = append(raised, r...), notified || n
		}
		for _, m := range b.Marks {
			if _, err := tx.Exec(ctx, e.q.MoveMark, m.Schedule, m.Late, m.Missed, m.Misfire, m.Dead, now); err != nil {
				return fmt.Errorf("move alarm marks of %s: %w", m.Schedule, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("raise alarms: %w", err)
	}
	if notified {
		Wake(e)
	}
	return raised, nil
}

// raise inserts a unless its key exists, enqueues its notifications if
// inserted, and closes what it resolves. It returns a if inserted, and
// whether a notification was.
func (e *Base) raise(ctx context.Context, tx Tx, a NewAlarm, now time.Time) ([]Alarm, bool, error) {
	var raised []Alarm
	notified := false
	errText := e.capText(a.Error)
	var id int64
	err := tx.QueryRow(ctx, e.q.InsertAlarm, a.Key, a.Schedule, a.Item, OrNull(a.ScheduledAt), string(a.Kind),
		a.JobID, errText, string(a.Detail), OpensAlarm(a.Kind), now).Scan(&id)
	switch {
	case errors.Is(err, ErrNoRows):
		// Raised before, by any process.
	case err != nil:
		return nil, false, fmt.Errorf("insert alarm %s: %w", a.Key, err)
	default:
		raised = append(raised, Alarm{ID: id, Key: a.Key, Schedule: a.Schedule, Item: a.Item,
			ScheduledAt: a.ScheduledAt, Kind: a.Kind, JobID: a.JobID, Error: errText, Detail: a.Detail,
			Open: OpensAlarm(a.Kind), RaisedAt: now.Truncate(time.Millisecond).UTC()})
		res, err := e.b.InsertJobs(ctx, tx, a.Notify, now)
		if err != nil {
			return nil, false, fmt.Errorf("notify alarm %s: %w", a.Key, err)
		}
		notified = Inserted(res)
	}
	if len(a.Resolves) > 0 {
		if _, err := tx.Exec(ctx, e.q.CloseAlarms, a.Resolves); err != nil {
			return nil, false, fmt.Errorf("close alarms: %w", err)
		}
	}
	return raised, notified, nil
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
