package dashboard

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestLiveOutput: a running job's page shows the output its pool stored
// so far, redacted as attempts' output is, in the part /runs/ID/live
// serves alone for live.js, and does not reload as a whole; an ended job's
// fragment names its state, so the script stops, and its page has no live
// part.
func TestLiveOutput(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		ctx := context.Background()
		clk := clock.NewFake(now)
		q := open(t, clk)
		cfg, err := config.Parse("schedules.toml", []byte(`
[tasks.pay]
command = ["true"]
redact_output = ["(?i)bearer [a-z0-9._-]+"]
`))
		if err != nil {
			t.Fatal(err)
		}
		running := mustEnqueueJob(t, q, queue.NewJob{Type: "pay", RunAt: now})
		done := mustEnqueueJob(t, q, queue.NewJob{Type: "pay", RunAt: now})
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: q.Clock().Now(),
			Claim: &store.Claim{Lease: time.Hour, N: 2, Types: []string{"pay"}}})
		if err != nil || len(r.Claimed) != 2 {
			t.Fatalf("claim: %+v, %v", r.Claimed, err)
		}
		finished := r.Claimed[1]
		if finished.ID != done {
			finished = r.Claimed[0]
		}
		res := store.Result{Job: finished, Worker: "node1-pool/w1", Outcome: queue.OutcomeDone, Output: "all <done>\n",
			Started: q.Clock().Now(), Finished: q.Clock().Now()}
		if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: q.Clock().Now(), Results: []store.Result{res},
			Live: []store.LiveOutput{{JobID: running, Attempt: 1, Output: "step <one>\nAuthorization: Bearer zz9.top-secret\n"}}}); err != nil {
			t.Fatal(err)
		}
		srv := newServer(t, q, cfg, clk)

		page := mustGet(t, srv, fmt.Sprintf("/runs/%d", running))
		live := between(t, page, `<section id="live"`, `</section>`)
		for _, want := range []string{fmt.Sprintf(`data-live="/runs/%d/live"`, running), `<div id="live-body" data-state="running">`,
			"step &lt;one&gt;\nAuthorization: [redacted]\n", `<script src="/static/live.js" defer></script>`} {
			if !strings.Contains(live, want) {
				t.Errorf("the live part lacks %s:\n%s", want, live)
			}
		}
		if strings.Contains(page, "data-refresh=") || strings.Contains(html.UnescapeString(page), "zz9.top-secret") {
			t.Errorf("the running job's page reloads as a whole or shows the secret:\n%s", page)
		}

		frag := mustGet(t, srv, fmt.Sprintf("/runs/%d/live", running))
		if !strings.HasPrefix(frag, `<div id="live-body" data-state="running">`) || !strings.Contains(frag, "step &lt;one&gt;") ||
			strings.Contains(frag, "<html") || strings.Contains(frag, "zz9.top-secret") {
			t.Errorf("/runs/%d/live:\n%s\nwant the live part alone, redacted", running, frag)
		}
		if frag := mustGet(t, srv, fmt.Sprintf("/runs/%d/live", done)); !strings.Contains(frag, `data-state="done"`) || strings.Contains(frag, "<pre") {
			t.Errorf("/runs/%d/live of a done job:\n%s\nwant its state and no output", done, frag)
		}
		if page := mustGet(t, srv, fmt.Sprintf("/runs/%d", done)); strings.Contains(page, `id="live"`) || !strings.Contains(page, "data-refresh=") {
			t.Errorf("a done job's page has a live part or does not reload:\n%s", page)
		}
		if code, _ := get(t, srv, "/runs/999999/live"); code != http.StatusNotFound {
			t.Errorf("/runs/999999/live = %d, want 404", code)
		}
		if code, _ := get(t, srv, "/runs/x/live"); code != http.StatusNotFound {
			t.Errorf("/runs/x/live = %d, want 404", code)
		}
	})
}

// TestLiveOutputNeedsLogin: with credentials, the live part sends to the
// login as every page does.
func TestLiveOutputNeedsLogin(t *testing.T) {
	t.Parallel()
	s := newAuthSite(t, credentials(t, false), clock.NewFake(now))
	resp, _ := s.browser(t).get("/runs/1/live")
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/login?next="+url.QueryEscape("/runs/1/live") {
		t.Errorf("GET /runs/1/live without login = %d to %q, want 303 to the login", resp.StatusCode, loc)
	}
}

func mustEnqueueJob(t *testing.T, q *queue.Client, j queue.NewJob) int64 {
	t.Helper()
	e, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	return e.ID
}
