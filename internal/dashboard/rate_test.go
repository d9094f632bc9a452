package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestRunPageSaysTheRateLimitHoldsAJob: a ready job whose task's rate limit
// for its key allows no start yet is told so, with when the next start is
// allowed; a job of another key, whose bucket is full, is not.
func TestRunPageSaysTheRateLimitHoldsAJob(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		ctx := context.Background()
		cfg, err := config.Parse("schedules.toml", []byte(`
[tasks.sync]
command = ["/bin/true"]
rate = "2/1m"
rate_key = "{{.customer}}"
`))
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"first", "held", "other"} {
			customer := "acme"
			if key == "other" {
				customer = "globex"
			}
			if _, err := q.Enqueue(ctx, queue.NewJob{Type: "sync", Key: key, RunAt: now.Add(-time.Minute),
				Payload: json.RawMessage(`{"customer":"` + customer + `"}`)}); err != nil {
				t.Fatal(err)
			}
		}
		rate := cfg.Tasks["sync"].TypeConfig().Rate
		key := func(_ int64, p json.RawMessage) (string, error) { return rate.Key(p), nil }
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "pool", Now: q.Clock().Now(),
			Presence: &store.Presence{Types: []string{"sync"}, Process: queue.Process{PID: 42, Host: "node1", Version: "test"}, First: true},
			Claim: &store.Claim{Lease: time.Hour, N: 1,
				Rated: []store.RatedClaim{{Type: "sync", Limit: store.RateLimit{Every: 30 * time.Second, Burst: 1, Key: key}, Room: 1}}}})
		if err != nil || len(r.Claimed) != 1 || r.Claimed[0].Key != "first" {
			t.Fatalf("claim = %+v, %v", r, err)
		}
		srv := newServer(t, q, cfg, clk)
		for key, want := range map[string]string{
			"held":  `rate limit: task sync for {{.customer}} "acme" starts at most 2 per 1m; the next start is allowed at`,
			"other": "ready: it waits for a free worker",
		} {
			j, err := q.JobByKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			page := mustGet(t, srv, fmt.Sprintf("/runs/%d", j.ID))
			why := text(between(t, page, `<section id="why">`, `</section>`))
			if !strings.Contains(why, want) {
				t.Errorf("%s: #why = %q, want %q", key, why, want)
			}
		}
	})
}
