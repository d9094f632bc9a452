package dashboard

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestDaemonsPage: /daemons shows each live daemon once, with its host,
// pid, version, config and uptime, and each of its pools with its size and
// the jobs it runs now, linked; an idle pool says so.
func TestDaemonsPage(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		ctx := context.Background()
		sha := store.ConfigSHA256([]byte("config"))
		node1 := queue.Process{PID: 42, Host: "node1", Version: "v1.2.3", Config: sha, ConfigAt: q.Clock().Now()}
		node2 := queue.Process{PID: 7, Host: "node2", Version: "v1.2.3"}
		for owner, pr := range map[string]queue.Process{"node1-pool": node1, "node1-pool/exports": node1, "node2-pool": node2} {
			if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: q.Clock().Now(), Presence: &store.Presence{Types: []string{"report"},
				Process: pr, Workers: 4, First: true}}); err != nil {
				t.Fatal(err)
			}
		}
		srv := newServer(t, q, parseConfig(t), clk)
		body := mustGet(t, srv, "/daemons")
		if !strings.Contains(body, `<a href="/daemons" aria-current="page">`) {
			t.Error("/daemons is not the current nav link")
		}
		if n := strings.Count(body, `<section class="daemon"`); n != 2 {
			t.Fatalf("/daemons shows %d daemons, want 2:\n%s", n, body)
		}
		one := between(t, body, `<section class="daemon" data-host="node1" data-pid="42">`, `</section>`)
		for _, want := range []string{`data-busy="1"`, "v1.2.3", sha[:12], `data-pool="node1-pool/exports"`, "idle", "busy 1 of 4", "busy 0 of 4",
			fmt.Sprintf(`<tr data-pool="node1-pool" data-job-id="%d">`, f.running), fmt.Sprintf(`<a href="/runs/%d">`, f.running),
			`<a href="/schedules/nightly">nightly</a>`, "<td data-label=\"Task\">report</td>"} {
			if !strings.Contains(one, want) {
				t.Errorf("node1's section lacks %s:\n%s", want, one)
			}
		}
		two := between(t, body, `<section class="daemon" data-host="node2" data-pid="7">`, `</section>`)
		if !strings.Contains(two, `data-busy="0"`) || !strings.Contains(two, "idle") || !strings.Contains(two, `<code>-</code>`) {
			t.Errorf("node2's section:\n%s\nwant idle, no config", two)
		}
	})
}
