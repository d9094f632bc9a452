package alarm

import (
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// DeadlineState is how a schedule with a start_within or a deadline
// stands, judged from its alarms, for -status and the dashboard.
type DeadlineState string

// The deadline states of a schedule.
const (
	DeadlineOnTime    DeadlineState = "on time"   // no open late or missed alarm, and no recent recovery
	DeadlineLate      DeadlineState = "late"      // an instant's run has not started within start_within
	DeadlineMissed    DeadlineState = "missed"    // an instant's run has not succeeded within its deadline
	DeadlineRecovered DeadlineState = "recovered" // the newest late or missed instant was run after all
)

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
