package cron_test

import (
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/schedule/cron"
)

// A daily expression at a wall time that the spring-forward skips runs at
// the jump; at the fall-back it runs at the first of the two 01:30s.
func ExampleExpr_Next() {
	ny, _ := time.LoadLocation("America/New_York")
	spring, _ := cron.Parse("30 2 * * *", ny)
	fall, _ := cron.Parse("30 1 * * *", ny)
	fmt.Println(spring.Next(time.Date(2026, 3, 8, 0, 0, 0, 0, ny)).Format(time.RFC3339))
	t := fall.Next(time.Date(2026, 11, 1, 0, 0, 0, 0, ny))
	fmt.Println(t.Format(time.RFC3339))
	fmt.Println(fall.Next(t).Format(time.RFC3339))
	// Output:
	// 2026-03-08T03:00:00-04:00
	// 2026-11-01T01:30:00-04:00
	// 2026-11-02T01:30:00-05:00
}
