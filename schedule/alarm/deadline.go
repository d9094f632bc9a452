package alarm

import (
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// DeadlineState is how a schedule with a start_within or a deadline stands,
// judged from its alarms. -status shows it, and the dashboard shows the
// open states (late, missed) of it.
type DeadlineState string

// The deadline states of a schedule.
const (
	DeadlineOnTime    DeadlineState = "on time"   // no open late or missed alarm, and no recent recovery
	DeadlineLate      DeadlineState = "late"      // an instant's run has not started within start_within
	DeadlineMissed    DeadlineState = "missed"    // an instant's run has not succeeded within its deadline
	DeadlineRecovered DeadlineState = "recovered" // the newest late or missed instant was run after all
)

// DeadlineStateOf is the deadline state of a schedule from its newest
// alarms, newest first, and the instant of its last run (zero when it has
// none, or when the caller does not know it). It is missed while one of the
// alarms is an open missed one, else late while one is an open late one,
// else recovered when the newest late, missed or recovered alarm is of the
// last run's instant (or the last run is unknown), else on time: a newer
// instant has run since. Dead and misfire alarms do not count.
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
