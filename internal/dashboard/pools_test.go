package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestConcurrencyLimitCountsDaemonsNotPools: a daemon with a [pools.NAME]
// table has a row per pool; a task's concurrency is the daemon's, so a job
// waiting behind the one report job a daemon of two pools may run is told
// it waits at the concurrency limit.
func TestConcurrencyLimitCountsDaemonsNotPools(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		ctx := context.Background()
		proc := queue.Process{PID: 42, Host: "node1", Version: "test"}
		for owner, types := range map[string][]string{"node1-pool": {"report"}, "node1-pool/exports": {"export"}} {
			if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: q.Clock().Now(), Presence: &store.Presence{Types: types,
				Process: proc, First: true}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range []string{"running", "waiting"} {
			if _, err := q.Enqueue(ctx, queue.NewJob{Type: "report", Key: key, RunAt: now.Add(-time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"report"}}})
		if err != nil || len(r.Claimed) != 1 {
			t.Fatalf("claim = %+v, %v", r, err)
		}
		waiting, err := q.JobByKey(ctx, "waiting")
		if err != nil {
			t.Fatal(err)
		}
		srv := newServer(t, q, parseConfig(t), clk)
		page := mustGet(t, srv, fmt.Sprintf("/runs/%d", waiting.ID))
		why := text(between(t, page, `<section id="why">`, `</section>`))
		if !strings.Contains(why, "concurrency limit: 1 job of task report running, its concurrency is 1 per daemon") {
			t.Errorf("#why = %q, want the concurrency limit of the one daemon", why)
		}
	})
}
