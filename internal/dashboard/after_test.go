package dashboard

import (
	"context"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestScheduleChain: a schedule's page draws the chain of schedules after
// it as links, each waiting one saying how many upstream jobs ended; the
// page of a schedule with after lists its upstream instants.
func TestScheduleChain(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		cfg, err := config.Parse("schedules.toml", []byte(testConfig+`
[[schedule]]
name = "summary"
after = "fan"
require = "done"
task = "report"
[[schedule]]
name = "mail"
after = "summary"
task = "pager"
`))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res, err := schedule.Backfill(ctx, q, cfg, "fan", at3(9), at3(9))
		if err != nil || len(res) != 2 {
			t.Fatalf("Backfill = %+v, %v", res, err)
		}
		if _, err := q.RequestCancel(ctx, res[0].ID, "test"); err != nil {
			t.Fatal(err)
		}
		srv := newServer(t, q, cfg, clk)
		chain := between(t, mustGet(t, srv, "/schedules/fan"), `<section id="chain">`, `</section>`)
		for _, want := range []string{
			`<a href="/schedules/fan">fan</a> &rarr; <a href="/schedules/summary">summary</a> <span class="sub">require done</span> <span class="badge st-pending">waiting: 1 of 2 ended</span>`,
			`<a href="/schedules/summary">summary</a> &rarr; <a href="/schedules/mail">mail</a> <span class="sub">require ended</span></li>`,
		} {
			if !strings.Contains(chain, want) {
				t.Errorf("chain on fan's page lacks %s:\n%s", want, chain)
			}
		}
		page := mustGet(t, srv, "/schedules/summary")
		if !strings.Contains(page, `<section id="chain">`) || !strings.Contains(between(t, page, `<table id="fanins">`, `</table>`), "waiting: 1 of 2 ended") {
			t.Errorf("summary's page lacks its chain or its waiting instant:\n%s", page)
		}
		if page := mustGet(t, srv, "/schedules/nightly"); strings.Contains(page, `id="chain"`) {
			t.Errorf("a schedule none follows draws a chain")
		}
	})
}

// TestOverviewListsSchedulesAfter: the overview lists a schedule with after
// like the others, by name, with its task, what it follows in place of its
// expression and next runs, how many upstream jobs ended while it waits,
// its state and its trouble, and no trigger or pause form.
func TestOverviewListsSchedulesAfter(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		cfg, err := config.Parse("schedules.toml", []byte(testConfig+`
[[schedule]]
name = "summary"
after = "fan"
task = "report"
[[schedule]]
name = "mail"
after = "summary"
task = "pager"
`))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res, err := schedule.Backfill(ctx, q, cfg, "fan", at3(9), at3(9))
		if err != nil || len(res) != 2 {
			t.Fatalf("Backfill = %+v, %v", res, err)
		}
		if _, err := q.RequestCancel(ctx, res[0].ID, "test"); err != nil {
			t.Fatal(err)
		}
		srv := newServer(t, q, cfg, clk)
		page := mustGet(t, srv, "/")
		rows := between(t, page, `<table id="schedules">`, `</table>`)
		summary := between(t, rows, `<tr data-schedule="summary"`, `</tr>`)
		for _, want := range []string{
			`<a href="/schedules/summary">summary</a><div class="sub">task report</div>`,
			`after <a href="/schedules/fan">fan</a>`,
			`<span class="after" data-after="fan">waiting: 1 of 2 ended</span>`,
			`<span class="badge active">active</span>`,
		} {
			if !strings.Contains(summary, want) {
				t.Errorf("summary's row lacks %s:\n%s", want, summary)
			}
		}
		if strings.Contains(summary, "<form") {
			t.Errorf("summary's row has a form:\n%s", summary)
		}
		mail := between(t, rows, `<tr data-schedule="mail"`, `</tr>`)
		if !strings.Contains(mail, `<span class="after" data-after="summary">after summary</span>`) {
			t.Errorf("mail's row lacks after summary:\n%s", mail)
		}
	})
}
