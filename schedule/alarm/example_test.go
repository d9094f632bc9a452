package alarm_test

import (
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/alarm"
)

// A schedule's deadline state follows its newest alarms: missed while a
// missed alarm is open, recovered once the instant ran after all, on time
// once a newer instant has run.
func ExampleDeadlineStateOf() {
	at := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	missed := store.Alarm{Schedule: "nightly", ScheduledAt: at, Kind: store.AlarmMissed, Open: true}
	fmt.Println(alarm.DeadlineStateOf([]store.Alarm{missed}, at))
	missed.Open = false
	recovered := store.Alarm{Schedule: "nightly", ScheduledAt: at, Kind: store.AlarmRecovered}
	fmt.Println(alarm.DeadlineStateOf([]store.Alarm{recovered, missed}, at))
	fmt.Println(alarm.DeadlineStateOf([]store.Alarm{recovered, missed}, at.Add(24*time.Hour)))
	// Output:
	// missed
	// recovered
	// on time
}
