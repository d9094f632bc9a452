package schedule

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestBeatFanIn: the schedule after another gets one job per upstream
// instant, once every item's job of that instant has ended, standing for
// the upstream instant and naming it; with require = "done" a failed item
// skips it instead, with the reason upstream failed.
func TestBeatFanIn(t *testing.T) {
	t.Parallel()
	for _, require := range []string{"ended", "done"} {
		t.Run(require, func(t *testing.T) {
			t.Parallel()
			q, clk := newTestQueue(t)
			ctx := context.Background()
			r := startBeat(t, q, mustParse(t, `
[tasks.t]
[tasks.summary]
[[schedule]]
name = "s"
cron = "* * * * *"
task = "t"
for_each = [ { n = 1 }, { n = 2 } ]
[[schedule]]
name = "d"
after = "s"
require = "`+require+`"
task = "summary"
payload = { to = "finance" }
`), clk)
			r.advance(time.Minute)
			at := t0.Truncate(time.Minute).Add(time.Minute)
			js, err := q.ScheduleJobs(ctx, "s", 10)
			if err != nil || len(js) != 2 {
				t.Fatalf("jobs of s = %v, %v; want 2", js, err)
			}
			if _, err := q.RequestCancel(ctx, js[0].ID, "test"); err != nil {
				t.Fatal(err)
			}
			if got, _ := q.ScheduleJobs(ctx, "d", 10); len(got) != 0 {
				t.Fatalf("jobs of d before the last item ended: %v", got)
			}
			if _, err := q.RequestCancel(ctx, js[1].ID, "test"); err != nil {
				t.Fatal(err)
			}
			f, err := q.FanIn(ctx, "fanin|"+DedupKey("d", "", at))
			if err != nil || f.Ended != 2 || f.Expected != 2 {
				t.Fatalf("FanIn = %+v, %v", f, err)
			}
			got, err := q.ScheduleJobs(ctx, "d", 10)
			if err != nil {
				t.Fatal(err)
			}
			if require == "done" {
				sk, err := q.SkipAt(ctx, "d", "", at)
				if len(got) != 0 || err != nil || sk.Reason != store.SkipUpstreamFailed {
					t.Fatalf("jobs of d = %v; skip = %+v, %v; want none, skipped as upstream failed", got, sk, err)
				}
				return
			}
			if len(got) != 1 || !got[0].ScheduledAt.Equal(at) || got[0].Type != "summary" {
				t.Fatalf("jobs of d = %+v; want one summary standing for %v", got, at)
			}
			var p struct {
				To, Upstream, Instant string
				Cancelled             []string
			}
			if err := json.Unmarshal(got[0].Payload, &p); err != nil || p.To != "finance" || p.Upstream != "s" ||
				p.Instant != at.Format(time.RFC3339) || !slices.Equal(p.Cancelled, []string{"n=1", "n=2"}) {
				t.Fatalf("payload = %s, %v", got[0].Payload, err)
			}
		})
	}
}
