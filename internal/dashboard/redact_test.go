package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestRunPageRedacts: the run page of a job whose task has redact and
// redact_output shows its payload's redacted fields, the values of those
// fields and the patterns' matches in its attempts' output and error as
// "[redacted]", and so does the list of dead jobs; the other fields show.
// The attempt is stored unmasked, as by a daemon before the task gained the
// keys: the page masks what it shows.
func TestRunPageRedacts(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		ctx := context.Background()
		clk := clock.NewFake(now)
		q := open(t, clk)
		cfg, err := config.Parse("schedules.toml", []byte(`
[tasks.pay]
command = ["true"]
redact = ["token", "card.number"]
redact_output = ["(?i)bearer [a-z0-9._-]+"]
`))
		if err != nil {
			t.Fatal(err)
		}
		e, err := q.Enqueue(ctx, queue.NewJob{Type: "pay", RunAt: now, MaxAttempts: 1,
			Payload: json.RawMessage(`{"token":"tok-SECRET-1","card":{"number":"4111111111111111","holder":"Ann"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: q.Clock().Now(), Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"pay"}}})
		if err != nil || len(r.Claimed) != 1 {
			t.Fatalf("claim: %+v, %v", r.Claimed, err)
		}
		res := store.Result{Job: r.Claimed[0], Worker: "node1-pool/w1", Outcome: queue.OutcomeDead,
			Error: "exit code 3: card 4111111111111111 refused", Output: "sent tok-SECRET-1\nAuthorization: Bearer zz9.top-secret\n",
			Started: q.Clock().Now(), Finished: q.Clock().Now().Add(time.Second)}
		if r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: q.Clock().Now(), Results: []store.Result{res}}); err != nil || !r.Fenced[0] {
			t.Fatalf("result: %+v, %v", r, err)
		}
		srv := newServer(t, q, cfg, clk)

		run := html.UnescapeString(mustGet(t, srv, fmt.Sprintf("/runs/%d", e.ID)))
		dead := html.UnescapeString(mustGet(t, srv, "/jobs?state=dead"))
		for _, s := range []string{"tok-SECRET-1", "4111111111111111", "zz9.top-secret"} {
			if strings.Contains(run, s) {
				t.Errorf("the run page shows the secret %q:\n%s", s, run)
			}
			if strings.Contains(dead, s) {
				t.Errorf("/jobs?state=dead shows the secret %q", s)
			}
		}
		for _, want := range []string{`"number":"[redacted]"`, `"holder":"Ann"`, `"token":"[redacted]"`,
			"sent [redacted]", "Authorization: [redacted]", "card [redacted] refused"} {
			if !strings.Contains(run, want) {
				t.Errorf("the run page lacks %q", want)
			}
		}
		if !strings.Contains(dead, "card [redacted] refused") {
			t.Errorf("/jobs?state=dead lacks the masked last error")
		}
	})
}
