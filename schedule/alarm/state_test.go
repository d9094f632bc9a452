package alarm

import (
	"testing"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestFinished: which ends of a job call for an evaluation now. A job of
// a watched schedule that went dead does; one that succeeded does only
// while its schedule has open alarms; a notification that ended does only
// while a recovery waits. Retries, releases, cancellations, jobs of
// unwatched schedules and jobs of no schedule do not.
func TestFinished(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse("t.toml", []byte(`
[tasks.t]
[tasks.page]
[[schedule]]
name = "watched"
cron = "@hourly"
task = "t"
deadline = "10m"
[[schedule]]
name = "alarmed"
cron = "@hourly"
task = "t"
notify = ["page"]
[[schedule]]
name = "plain"
cron = "@hourly"
task = "t"
`))
	if err != nil {
		t.Fatal(err)
	}
	job := func(schedule string, o queue.Outcome) queue.Finished {
		return queue.Finished{Type: "t", Schedule: schedule, Outcome: o}
	}
	note := func(o queue.Outcome) queue.Finished {
		return queue.Finished{Type: "page", Notification: true, Outcome: o}
	}
	tests := []struct {
		name  string
		waits bool
		f     queue.Finished
		want  bool
	}{
		{"dead job of a watched schedule", false, job("watched", queue.OutcomeDead), true},
		{"done job, no open alarm", false, job("watched", queue.OutcomeDone), false},
		{"done job, open alarms", false, job("alarmed", queue.OutcomeDone), true},
		{"retried job, open alarms", false, job("alarmed", queue.OutcomeRetry), false},
		{"released job", false, job("alarmed", queue.OutcomeReleased), false},
		{"cancelled job", false, job("alarmed", queue.OutcomeCancelled), false},
		{"dead job of an unwatched schedule", false, job("plain", queue.OutcomeDead), false},
		{"dead job of an unknown schedule", false, job("gone", queue.OutcomeDead), false},
		{"dead job of no schedule", false, job("", queue.OutcomeDead), false},
		{"notification done, a recovery waits", true, note(queue.OutcomeDone), true},
		{"notification dead, a recovery waits", true, note(queue.OutcomeDead), true},
		{"notification retried, a recovery waits", true, note(queue.OutcomeRetry), false},
		{"notification done, nothing waits", false, note(queue.OutcomeDone), false},
	}
	for _, tt := range tests {
		e := New(nil, nil)
		e.setAlarmed(map[string]bool{"alarmed": true})
		e.setRecoveryWaits(tt.waits)
		if got := e.Finished(cfg, tt.f); got != tt.want {
			t.Errorf("%s: Finished(%+v) = %v, want %v", tt.name, tt.f, got, tt.want)
		}
	}
}
