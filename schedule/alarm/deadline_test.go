package alarm

import (
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestDeadlineStateOf: each deadline state, from a schedule's newest
// alarms and its last run.
func TestDeadlineStateOf(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC)
	earlier := at.Add(-24 * time.Hour)
	al := func(kind store.AlarmKind, open bool, when time.Time) store.Alarm {
		return store.Alarm{Kind: kind, Open: open, ScheduledAt: when}
	}
	tests := []struct {
		name    string
		alarms  []store.Alarm
		lastRun time.Time
		want    DeadlineState
	}{
		{"no alarms", nil, at, DeadlineOnTime},
		{"no alarms, never run", nil, time.Time{}, DeadlineOnTime},
		{"late", []store.Alarm{al(store.AlarmLate, true, at)}, at, DeadlineLate},
		{"missed after late", []store.Alarm{al(store.AlarmMissed, true, at), al(store.AlarmLate, true, at)}, at, DeadlineMissed},
		{"open late before an open miss", []store.Alarm{al(store.AlarmLate, true, at), al(store.AlarmMissed, true, earlier)}, at, DeadlineMissed},
		{"old miss still open", []store.Alarm{al(store.AlarmRecovered, false, at), al(store.AlarmMissed, true, earlier)}, at, DeadlineMissed},
		{"late, an older one recovered", []store.Alarm{al(store.AlarmLate, true, at), al(store.AlarmRecovered, false, earlier)}, at, DeadlineLate},
		{"recovered", []store.Alarm{al(store.AlarmRecovered, false, at), al(store.AlarmMissed, false, at)}, at, DeadlineRecovered},
		{"recovered, last run unknown", []store.Alarm{al(store.AlarmRecovered, false, earlier), al(store.AlarmMissed, false, earlier)}, time.Time{}, DeadlineRecovered},
		{"closed late alarm of the last run", []store.Alarm{al(store.AlarmLate, false, at)}, at, DeadlineRecovered},
		{"recovered, newer run since", []store.Alarm{al(store.AlarmRecovered, false, earlier), al(store.AlarmMissed, false, earlier)}, at, DeadlineOnTime},
		{"dead only", []store.Alarm{al(store.AlarmDead, true, at)}, at, DeadlineOnTime},
		{"misfire only", []store.Alarm{al(store.AlarmMisfire, false, at)}, at, DeadlineOnTime},
	}
	for _, tt := range tests {
		if got := DeadlineStateOf(tt.alarms, tt.lastRun); got != tt.want {
			t.Errorf("%s: DeadlineStateOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}
