package schedule_test

import (
	"fmt"
	"log"
	"time"

	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// Preview the next runs of a loaded schedule in its own zone, with the
// dedup key the beat gives the job of its first item at each.
func ExampleNextN() {
	cfg, err := config.Load("config/testdata/schedules.toml")
	if err != nil {
		log.Fatal(err)
	}
	s, _ := cfg.Schedule("nightly-report")
	from := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	next, err := schedule.NextN(cfg, "nightly-report", from, 3)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range next {
		fmt.Println(t.Format(time.RFC3339), t.Location(), schedule.DedupKey(s.Name, s.Items()[0].ID, t))
	}
	// Output:
	// 2026-03-29T03:00:00+03:00 Europe/Istanbul nightly-report|customer=acme|2026-03-29T00:00:00Z
	// 2026-03-30T03:00:00+03:00 Europe/Istanbul nightly-report|customer=acme|2026-03-30T00:00:00Z
	// 2026-03-31T03:00:00+03:00 Europe/Istanbul nightly-report|customer=acme|2026-03-31T00:00:00Z
}
