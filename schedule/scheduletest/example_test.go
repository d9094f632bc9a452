package scheduletest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/internal/examplet"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/queuetest"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/schedule/scheduletest"
)

// nightlyReport is a fan-out schedule: a report per customer at 03:00 in
// Istanbul.
const nightlyReport = `
[tasks.report]
command = ["./report.sh", "{{.customer}}", "{{.format}}"]

[[schedule]]
name = "nightly-report"
cron = "0 3 * * *"
timezone = "Europe/Istanbul"
task = "report"
payload = { format = "pdf" }
for_each = [ { customer = "acme" }, { customer = "globex", format = "csv" } ]
`

// A fan-out schedule: each instant makes one job per for_each item, its
// payload the schedule's merged with the item's, its key the schedule, the
// item and the instant. The first Tick starts the schedules a second before
// its instant, as a daemon started then.
func ExampleBeat_Tick() {
	t := examplet.New() // in a test, the *testing.T
	defer t.Finish()
	b := scheduletest.Parse(t, nightlyReport, scheduletest.Config{})

	istanbul, _ := time.LoadLocation("Europe/Istanbul")
	tick := b.Tick(time.Date(2026, 3, 2, 3, 0, 0, 0, istanbul))
	for _, j := range tick.Jobs {
		fmt.Println(j.Key, string(j.Payload))
	}
	// Nothing is due between two nights.
	fmt.Println(len(b.Tick(time.Date(2026, 3, 2, 12, 0, 0, 0, istanbul)).Jobs), "jobs at noon")
	// Output:
	// nightly-report|customer=acme|2026-03-02T00:00:00Z {"customer":"acme","format":"pdf"}
	// nightly-report|customer=globex,format=csv|2026-03-02T00:00:00Z {"customer":"globex","format":"csv"}
	// 0 jobs at noon
}

// lateReport pages when the 03:00 report has not started within five
// minutes.
const lateReport = `
[tasks.report]
command = ["./report.sh"]

[tasks.page]   # a Go task type: neither command nor url

[[schedule]]
name = "nightly-report"
cron = "0 3 * * *"
task = "report"
start_within = "5m"
notify = ["page"]
`

// An alarm's notify task written in Go: a typed handler of
// config.AlarmPayload. When the 03:00 run has not started by 03:05, the
// pass at 03:06 raises a late alarm and enqueues the page task's job, which
// queuetest.Work runs.
func Example_alarmNotify() {
	t := examplet.New() // in a test, the *testing.T
	defer t.Finish()
	b := scheduletest.Parse(t, lateReport, scheduletest.Config{})

	page := queue.WorkFunc[config.AlarmPayload](func(ctx context.Context, j *queue.TypedJob[config.AlarmPayload]) (string, error) {
		a := j.Args
		return fmt.Sprintf("paged: %s %s at %s, due by %s", a.Schedule, a.Kind, a.Instant, a.Deadline), nil
	})

	at := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	b.Tick(at) // the report's job, which no pool runs here
	tick := b.Tick(at.Add(6 * time.Minute))
	for _, a := range tick.Alarms {
		fmt.Println("alarm:", a.Schedule, a.Kind)
	}
	for _, j := range tick.Jobs {
		r := queuetest.Work(t, page, j, queuetest.Config{})
		fmt.Println(j.Type, r.Outcome, r.Output)
	}
	// Output:
	// alarm: nightly-report late
	// page done paged: nightly-report late at 2026-03-02T03:00:00Z, due by 2026-03-02T03:05:00Z
}
