package alarm

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// DeadlineState is how a schedule with a start_within or a deadline
// stands, judged from its alarms, for -status, the metrics and the
// dashboard alike.
type DeadlineState string

// The deadline states of a schedule.
const (
	DeadlineNone      DeadlineState = ""          // the schedule watches neither start_within nor deadline
	DeadlineOnTime    DeadlineState = "on time"   // no open late or missed alarm, and no recent recovery
	DeadlineLate      DeadlineState = "late"      // an instant's run has not started within start_within
	DeadlineMissed    DeadlineState = "missed"    // an instant's run has not succeeded within its deadline
	DeadlineRecovered DeadlineState = "recovered" // the newest late or missed instant was run after all
)

// DeadlineStates are the states a watched schedule can be in.
var DeadlineStates = []DeadlineState{DeadlineOnTime, DeadlineLate, DeadlineMissed, DeadlineRecovered}

// DeadlineAlarms is how many of a schedule's newest alarms its deadline
// state is judged from: every reader judges from the same ones.
const DeadlineAlarms = 20

// DeadlineStateOf is a schedule's state from its newest alarms, newest
// first, and its last run's instant (zero if none or unknown): missed
// while a missed alarm is open, else late while a late one is, else
// recovered when the newest late, missed or recovered alarm is of the
// last run (or it is unknown), else on time. Dead and misfire alarms do
// not count.
func DeadlineStateOf(alarms []store.Alarm, lastRun time.Time) DeadlineState {
	var state DeadlineState
	for _, al := range alarms {
		switch {
		case al.Open && al.Kind == store.AlarmMissed:
			return DeadlineMissed
		case al.Open && al.Kind == store.AlarmLate:
			state = DeadlineLate
		case state == "" && (al.Kind == store.AlarmRecovered || al.Kind == store.AlarmLate || al.Kind == store.AlarmMissed):
			state = DeadlineRecovered
			if !lastRun.IsZero() && !lastRun.Equal(al.ScheduledAt) {
				state = DeadlineOnTime
			}
		}
	}
	if state == "" {
		return DeadlineOnTime
	}
	return state
}

// DeadlineOf is the one rule for sc's deadline state: DeadlineStateOf of
// its newest DeadlineAlarms alarms (newest first; more are ignored) and
// the instant of its newest scheduled run (zero if none); DeadlineNone
// when sc watches neither start_within nor deadline.
func DeadlineOf(sc *config.Schedule, alarms []store.Alarm, lastRun time.Time) DeadlineState {
	if sc.StartWithin == 0 && sc.Deadline == 0 {
		return DeadlineNone
	}
	return DeadlineStateOf(alarms[:min(len(alarms), DeadlineAlarms)], lastRun)
}

// AlarmReader reads a schedule's newest alarms, newest first.
type AlarmReader interface {
	Alarms(ctx context.Context, schedule string, limit int) ([]store.Alarm, error)
}

// ReadDeadline reads sc's newest alarms and judges them with DeadlineOf;
// it returns the alarms read, and reads none when sc watches no deadline.
func ReadDeadline(ctx context.Context, r AlarmReader, sc *config.Schedule, lastRun time.Time) (DeadlineState, []store.Alarm, error) {
	if sc.StartWithin == 0 && sc.Deadline == 0 {
		return DeadlineNone, nil, nil
	}
	alarms, err := r.Alarms(ctx, sc.Name, DeadlineAlarms)
	if err != nil {
		return DeadlineNone, nil, err
	}
	return DeadlineOf(sc, alarms, lastRun), alarms, nil
}
