package schedule_test

import (
	"fmt"
	"log"
	"time"

	"github.com/scheduler-run/scheduler/schedule"
)

// Load a file, then preview the next runs of a schedule in its own zone.
func ExampleLoad() {
	cfg, err := schedule.Load("testdata/schedules.toml")
	if err != nil {
		log.Fatal(err)
	}
	s, _ := cfg.Schedule("nightly-report")
	for _, it := range s.Items() {
		fmt.Printf("item %s: %s\n", it.ID, it.Payload)
	}
	from := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	next, err := schedule.NextN(cfg, "nightly-report", from, 3)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range next {
		fmt.Println(t.Format(time.RFC3339), t.Location(), schedule.DedupKey(s.Name, s.Items()[0].ID, t))
	}
	// Output:
	// item customer=acme: {"customer":"acme","format":"pdf"}
	// item customer=globex: {"customer":"globex","format":"pdf"}
	// 2026-03-29T03:00:00+03:00 Europe/Istanbul nightly-report|customer=acme|2026-03-29T00:00:00Z
	// 2026-03-30T03:00:00+03:00 Europe/Istanbul nightly-report|customer=acme|2026-03-30T00:00:00Z
	// 2026-03-31T03:00:00+03:00 Europe/Istanbul nightly-report|customer=acme|2026-03-31T00:00:00Z
}

// A daily spec at a wall time that the spring-forward skips runs at the
// jump; at the fall-back it runs at the first of the two 01:30s.
func ExampleSpec_Next() {
	ny, _ := time.LoadLocation("America/New_York")
	spring, _ := schedule.ParseSpec("30 2 * * *", ny)
	fall, _ := schedule.ParseSpec("30 1 * * *", ny)
	fmt.Println(spring.Next(time.Date(2026, 3, 8, 0, 0, 0, 0, ny)).Format(time.RFC3339))
	t := fall.Next(time.Date(2026, 11, 1, 0, 0, 0, 0, ny))
	fmt.Println(t.Format(time.RFC3339))
	fmt.Println(fall.Next(t).Format(time.RFC3339))
	// Output:
	// 2026-03-08T03:00:00-04:00
	// 2026-11-01T01:30:00-04:00
	// 2026-11-02T01:30:00-05:00
}
