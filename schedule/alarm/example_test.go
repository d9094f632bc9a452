package alarm_test

import (
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/alarm"
)

// A schedule's deadline state follows its newest alarms: missed while a
// missed alarm is open, recovered once the instant ran after all, on time
// once a newer instant has run.
func ExampleDeadlineStateOf() {
	at := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	missed := queue.Alarm{Schedule: "nightly", ScheduledAt: at, Kind: queue.AlarmMissed, Open: true}
	fmt.Println(alarm.DeadlineStateOf([]queue.Alarm{missed}, at))
	missed.Open = false
	recovered := queue.Alarm{Schedule: "nightly", ScheduledAt: at, Kind: queue.AlarmRecovered}
	fmt.Println(alarm.DeadlineStateOf([]queue.Alarm{recovered, missed}, at))
	fmt.Println(alarm.DeadlineStateOf([]queue.Alarm{recovered, missed}, at.Add(24*time.Hour)))
	// Output:
	// missed
	// recovered
	// on time
}
