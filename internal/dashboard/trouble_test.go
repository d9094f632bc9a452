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
	"github.com/scheduler-run/scheduler/schedule/config"
)

// troubleConfig adds to testConfig a schedule run only by hand and one
// that never ran.
const troubleConfig = testConfig + `
[tasks.adhoc]
command = ["true"]

[[schedule]]
name = "adhoc"
cron = "0 3 1 1 *"
task = "adhoc"

[[schedule]]
name = "quiet"
cron = "0 3 1 1 *"
task = "report"
`

// TestOverviewShowsTroubleFirst: each row of / counts its running and
// dead jobs, manual ones included, and its open alarms by kind; manual
// runs are cells of the strip; rows in trouble (dead jobs, open alarms, a
// late or missed deadline) are marked and come first on their page.
func TestOverviewShowsTroubleFirst(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		seed(t, q)
		cfg, err := config.Parse("schedules.toml", []byte(troubleConfig))
		if err != nil {
			t.Fatal(err)
		}
		dead, running := manualRuns(t, q)
		srv := newServer(t, q, cfg, clk)
		body := mustGet(t, srv, "/")

		names := rowsInOrder(body)
		if want := []string{"adhoc", "fan", "nightly", "quiet"}; strings.Join(names, " ") != strings.Join(want, " ") {
			t.Errorf("rows in order %v, want %v (trouble first, then by name)", names, want)
		}
		adhoc := between(t, body, `<tr data-schedule="adhoc"`, `</tr>`)
		if strings.Contains(adhoc, "no run kept yet") {
			t.Error("adhoc, with a dead and a running manual run, shows no run kept yet")
		}
		cells := cellsOf(adhoc)
		if len(cells) != 2 || !cells[0].manual || !cells[1].manual || cells[0].outcome != outcomeDead || cells[1].outcome != outcomeRunning ||
			cells[0].href != hrefOf(dead) || cells[1].href != hrefOf(running) || !strings.Contains(cells[0].title, "manual run") {
			t.Errorf("adhoc's strip = %+v, want its dead then running manual runs", cells)
		}
		for _, want := range []string{`class="trouble"`, `data-count="running"`, `data-count="dead"`, `>1 running<`, `>1 dead<`} {
			if !strings.Contains(adhoc, want) {
				t.Errorf("adhoc's row lacks %s:\n%s", want, adhoc)
			}
		}
		nightly := between(t, body, `<tr data-schedule="nightly"`, `</tr>`)
		if !strings.Contains(nightly, `data-trouble="1 dead job, 1 open missed alarm, deadline missed"`) ||
			!strings.Contains(nightly, `data-open="missed"`) || !strings.Contains(nightly, `>1 running<`) {
			t.Errorf("nightly's row does not show its dead job, running job, open miss and deadline:\n%s", nightly)
		}
		quiet := between(t, body, `<tr data-schedule="quiet"`, `</tr>`)
		if strings.Contains(quiet, "trouble") || !strings.Contains(quiet, "no run kept yet") {
			t.Errorf("quiet's row:\n%s\nwant no trouble and no run", quiet)
		}
	})
}

// manualRuns triggers adhoc twice by hand, as -trigger does: one run goes
// dead, one is left running.
func manualRuns(t *testing.T, q *queue.Client) (dead, running int64) {
	t.Helper()
	ctx := context.Background()
	for _, key := range []string{"adhoc|manual|1", "adhoc|manual|2"} {
		if _, err := q.Enqueue(ctx, queue.NewJob{Key: key, Type: "adhoc", Schedule: "adhoc", RunAt: now, MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	claim := func() *queue.Job {
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"adhoc"}}})
		if err != nil || len(r.Claimed) != 1 {
			t.Fatalf("claim: %+v, %v", r, err)
		}
		return r.Claimed[0]
	}
	j := claim()
	res := store.Result{Job: j, Worker: "node1-pool/w1", Outcome: queue.OutcomeDead, Error: "exit status 1", Started: now, Finished: now}
	if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now, Results: []store.Result{res}}); err != nil {
		t.Fatal(err)
	}
	return j.ID, claim().ID
}

// rowsInOrder returns the schedules of a page of / in the order shown.
func rowsInOrder(body string) []string {
	var names []string
	for _, m := range rowNameRE.FindAllStringSubmatch(body, -1) {
		names = append(names, m[1])
	}
	return names
}

func hrefOf(id int64) string { return fmt.Sprintf("/runs/%d", id) }
