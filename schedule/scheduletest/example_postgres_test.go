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

// The fan-out schedule of ExampleBeat_Tick, its passes written to
// PostgreSQL: Config.DB is the database's URL, its search_path a schema of
// the test's own.
func ExampleBeat_Tick_postgres() {
	t := examplet.New() // in a test, the *testing.T
	defer t.Finish()
	url := examplet.PostgresURL() // in a test, a schema of its own in search_path
	b := scheduletest.Parse(t, nightlyReport, scheduletest.Config{DB: url})

	istanbul, _ := time.LoadLocation("Europe/Istanbul")
	tick := b.Tick(time.Date(2026, 3, 2, 3, 0, 0, 0, istanbul))
	for _, j := range tick.Jobs {
		fmt.Println(j.Key, string(j.Payload))
	}
	fmt.Println(len(b.Tick(time.Date(2026, 3, 2, 12, 0, 0, 0, istanbul)).Jobs), "jobs at noon")
	// Output:
	// nightly-report|customer=acme|2026-03-02T00:00:00Z {"customer":"acme","format":"pdf"}
	// nightly-report|customer=globex,format=csv|2026-03-02T00:00:00Z {"customer":"globex","format":"csv"}
	// 0 jobs at noon
}

// The late alarm of Example_alarmNotify, raised on PostgreSQL.
func Example_alarmNotify_postgres() {
	t := examplet.New() // in a test, the *testing.T
	defer t.Finish()
	b := scheduletest.Parse(t, lateReport, scheduletest.Config{DB: examplet.PostgresURL()})

	page := queue.WorkFunc[config.AlarmPayload](func(ctx context.Context, j *queue.TypedJob[config.AlarmPayload]) (string, error) {
		a := j.Args
		return fmt.Sprintf("paged: %s %s at %s, due by %s", a.Schedule, a.Kind, a.Instant, a.Deadline), nil
	})

	at := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	b.Tick(at)
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
