package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// TestBulkActions: the jobs list offers the retry and discard of the jobs
// ticked, and a schedule's page the retry of its dead jobs, behind a box to
// tick. Each POST acts on what it may, says how many and which, and names
// each job it left with its state; a discard records who, from where.
func TestBulkActions(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		ctx := context.Background()
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		s := newSite(t, q, parseConfig(t), credentials(t, true), clk)
		b := s.browser(t)
		b.login(annLogin)
		csrf := b.csrf("/jobs")
		act := func(action string, form url.Values, back string) string {
			t.Helper()
			form.Set("csrf", csrf)
			form.Set("back", back)
			resp, body := b.post("/actions/"+action, form)
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != back {
				t.Fatalf("POST /actions/%s %v = %d to %q, want 303 to %s:\n%s", action, form, resp.StatusCode, loc, back, body)
			}
			_, page := b.get(back)
			return text(between(t, page, `<p id="flash"`, `</p>`))
		}
		state := func(id int64) queue.State {
			t.Helper()
			j, err := q.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return j.State
		}
		ids := func(ids ...int64) url.Values {
			v := url.Values{}
			for _, id := range ids {
				v.Add("job", strconv.FormatInt(id, 10))
			}
			return v
		}

		_, page := b.get("/jobs")
		form := between(t, page, `<form id="bulk"`, `</form>`)
		for _, want := range []string{`data-action="retry-jobs"`, `data-action="discard-jobs"`, `name="csrf"`} {
			if !strings.Contains(form, want) {
				t.Errorf("the jobs list's bulk form lacks %s:\n%s", want, form)
			}
		}
		if row := between(t, page, fmt.Sprintf(`<tr data-job-id="%d">`, f.dead), `</tr>`); !strings.Contains(row, fmt.Sprintf(`name="job" value="%d" form="bulk"`, f.dead)) {
			t.Errorf("the dead job's row has no box of the bulk form:\n%s", row)
		}

		flash := act("discard-jobs", ids(f.pending, f.dead, f.done), "/jobs?state=dead")
		want := fmt.Sprintf("Discarded 1 job (%d): no longer counted as dead. Left 2 as they were: job %d is done, not dead; job %d is pending, not dead.", f.dead, f.done, f.pending)
		if flash != want {
			t.Errorf("flash after discarding a selection:\n%s\nwant\n%s", flash, want)
		}
		j, err := q.Job(ctx, f.dead)
		if err != nil || j.State != queue.StateDiscarded || j.DiscardedBy != "ann (dashboard, from 127.0.0.1)" {
			t.Fatalf("job %d after the discard: %+v, %v; want discarded by ann from the dashboard", f.dead, j, err)
		}
		if state(f.pending) != queue.StatePending || state(f.done) != queue.StateDone {
			t.Errorf("a discard changed a job it refused: pending %s, done %s", state(f.pending), state(f.done))
		}
		if !strings.Contains(s.logs.String(), "action=discard-jobs who=ann remote_addr=127.0.0.1 job_ids=") {
			t.Errorf("the discard is not logged:\n%s", s.logs.String())
		}
		_, page = b.get("/jobs?state=discarded")
		if row := between(t, page, fmt.Sprintf(`<tr data-job-id="%d">`, f.dead), `</tr>`); !strings.Contains(row, "st-discarded") || !strings.Contains(row, "no such table: sales") {
			t.Errorf("the discarded job's row:\n%s", row)
		}

		if flash := act("retry-jobs", ids(f.done, f.dead), "/jobs"); flash != fmt.Sprintf("Retried 1 job (%d): made pending with fresh attempts. Left 1 as they were: job %d is done, not dead or discarded.", f.dead, f.done) {
			t.Errorf("flash after retrying a selection: %s", flash)
		}
		if state(f.dead) != queue.StatePending {
			t.Errorf("the discarded job after a retry: %s, want pending", state(f.dead))
		}
		if flash := act("retry-jobs", url.Values{}, "/jobs"); !strings.Contains(flash, "no job selected") {
			t.Errorf("flash after a retry of nothing: %s", flash)
		}
		if flash := act("discard-jobs", url.Values{"job": {"x"}}, "/jobs"); !strings.Contains(flash, `"x" is not a job id`) {
			t.Errorf("flash after a discard of no id: %s", flash)
		}

		_, page = b.get("/schedules/fan")
		form = between(t, page, `<form id="retry-dead"`, `</form>`)
		for _, want := range []string{`name="schedule" value="fan"`, `name="confirm" value="yes" required`} {
			if !strings.Contains(form, want) {
				t.Errorf("fan's retry-all form lacks %s:\n%s", want, form)
			}
		}
		if flash := act("retry-dead", url.Values{"schedule": {"fan"}}, "/schedules/fan"); !strings.Contains(flash, "not confirmed") {
			t.Errorf("flash after an unconfirmed retry of fan's dead jobs: %s", flash)
		}
		if state(f.fanDead) != queue.StateDead {
			t.Fatalf("an unconfirmed retry changed job %d: %s", f.fanDead, state(f.fanDead))
		}
		if flash := act("retry-dead", url.Values{"schedule": {"fan"}, "confirm": {"yes"}}, "/schedules/fan"); flash != fmt.Sprintf("Retried 1 job (%d): made pending with fresh attempts.", f.fanDead) {
			t.Errorf("flash after retrying fan's dead jobs: %s", flash)
		}
		if state(f.fanDead) != queue.StatePending {
			t.Errorf("fan's dead job after its retry: %s", state(f.fanDead))
		}
		if flash := act("retry-dead", url.Values{"schedule": {"fan"}, "confirm": {"yes"}}, "/schedules/fan"); flash != "fan has no dead job: nothing to retry." {
			t.Errorf("flash after retrying fan's dead jobs again: %s", flash)
		}

		// Without the session's token, or with actions off, nothing moves.
		if resp, _ := b.post("/actions/discard-jobs", ids(f.retried)); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a discard without the csrf token: %d, want 403", resp.StatusCode)
		}
		ro := newSite(t, q, parseConfig(t), credentials(t, false), clk)
		rb := ro.browser(t)
		rb.login(annLogin)
		if _, body := rb.get("/jobs"); strings.Contains(body, `id="bulk"`) || strings.Contains(body, `name="job"`) {
			t.Error("actions disabled, yet the jobs list offers a selection")
		}
		if _, body := rb.get("/schedules/fan"); strings.Contains(body, `id="retry-dead"`) {
			t.Error("actions disabled, yet fan's page offers to retry its dead jobs")
		}
	})
}
