package schedule

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestBeatReportsWhatItCommitted: the Materialised and Skipped events tell
// of exactly the jobs and skips the beat's commits wrote: fan-out jobs,
// overlaps while the first runs stay pending, and misfires after a jump.
func TestBeatReportsWhatItCommitted(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	var mu sync.Mutex
	jobsHeard := 0
	skipsHeard := map[store.SkipReason]int{}
	r := startBeatWith(t, q, mustParse(t, `
[tasks.t]
[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
for_each = [ { n = 1 }, { n = 2 } ]
overlap = "skip"
`), BeatConfig{Clock: clk,
		EventFunc: func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			switch e := e.(type) {
			case Materialised:
				if e.Schedule != "s" {
					t.Errorf("Materialised{Schedule: %q}", e.Schedule)
				}
				jobsHeard += e.Jobs
			case Skipped:
				if e.Schedule != "s" {
					t.Errorf("Skipped{Schedule: %q}", e.Schedule)
				}
				skipsHeard[e.Reason] += e.Runs
			}
		},
	})
	// No pool runs: the first jobs stay pending, the next runs overlap.
	for range 3 {
		r.advance(time.Minute)
	}
	r.advance(10 * time.Minute) // missed instants: misfires
	mu.Lock()
	defer mu.Unlock()
	if got, want := jobsHeard, len(jobs(t, q, "s")); got != want || got != 2 {
		t.Errorf("Materialised told of %d jobs, the queue holds %d, want 2", got, want)
	}
	stored := map[store.SkipReason]int{}
	for _, s := range skips(t, q, "s") {
		reason, _, _ := strings.Cut(s, " ")
		stored[store.SkipReason(reason)]++
	}
	if stored[store.SkipOverlap] == 0 || stored[store.SkipMisfire] == 0 {
		t.Fatalf("skips stored %v: the test wants overlaps and misfires", stored)
	}
	for reason, n := range stored {
		if skipsHeard[reason] != n {
			t.Errorf("Skipped told of %d %s skips, the queue holds %d", skipsHeard[reason], reason, n)
		}
	}
	for reason, n := range skipsHeard {
		if stored[reason] != n {
			t.Errorf("Skipped told of %d %s skips, the queue holds %d", n, reason, stored[reason])
		}
	}
}
