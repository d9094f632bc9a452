package alarm

import (
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// TestDeadlineStateOf: each deadline state, from a schedule's newest
// alarms and its last run.
func TestDeadlineStateOf(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	earlier := at.Add(-24 * time.Hour)
	al := func(kind queue.AlarmKind, open bool, when time.Time) queue.Alarm {
		return queue.Alarm{Kind: kind, Open: open, ScheduledAt: when}
	}
	tests := []struct {
		name    string
		alarms  []queue.Alarm
		lastRun time.Time
		want    DeadlineState
	}{
		{"no alarms", nil, at, DeadlineOnTime},
		{"no alarms, never run", nil, time.Time{}, DeadlineOnTime},
		{"late", []queue.Alarm{al(queue.AlarmLate, true, at)}, at, DeadlineLate},
		{"missed after late", []queue.Alarm{al(queue.AlarmMissed, true, at), al(queue.AlarmLate, true, at)}, at, DeadlineMissed},
		{"open late before an open miss", []queue.Alarm{al(queue.AlarmLate, true, at), al(queue.AlarmMissed, true, earlier)}, at, DeadlineMissed},
		{"old miss still open", []queue.Alarm{al(queue.AlarmRecovered, false, at), al(queue.AlarmMissed, true, earlier)}, at, DeadlineMissed},
		{"late, an older one recovered", []queue.Alarm{al(queue.AlarmLate, true, at), al(queue.AlarmRecovered, false, earlier)}, at, DeadlineLate},
		{"recovered", []queue.Alarm{al(queue.AlarmRecovered, false, at), al(queue.AlarmMissed, false, at)}, at, DeadlineRecovered},
		{"recovered, last run unknown", []queue.Alarm{al(queue.AlarmRecovered, false, earlier), al(queue.AlarmMissed, false, earlier)}, time.Time{}, DeadlineRecovered},
		{"closed late alarm of the last run", []queue.Alarm{al(queue.AlarmLate, false, at)}, at, DeadlineRecovered},
		{"recovered, newer run since", []queue.Alarm{al(queue.AlarmRecovered, false, earlier), al(queue.AlarmMissed, false, earlier)}, at, DeadlineOnTime},
		{"dead only", []queue.Alarm{al(queue.AlarmDead, true, at)}, at, DeadlineOnTime},
		{"misfire only", []queue.Alarm{al(queue.AlarmMisfire, false, at)}, at, DeadlineOnTime},
	}
	for _, tt := range tests {
		if got := DeadlineStateOf(tt.alarms, tt.lastRun); got != tt.want {
			t.Errorf("%s: DeadlineStateOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
