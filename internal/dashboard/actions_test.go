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

// TestActions: logged in with actions enabled, each action's form is on
// its page, its POST does in the database what the command of the same
// name does, comes back to the page it was posted from with a flash
// message shown once, and is logged with who did it and from where.
func TestActions(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		ctx := context.Background()
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		s := newSite(t, q, parseConfig(t), credentials(t, true), clk)
		b := s.browser(t)
		b.login(annLogin)

		_, body := b.get("/")
		row := between(t, body, `<tr data-schedule="nightly"`, `</tr>`)
		for _, want := range []string{`data-action="trigger"`, `data-action="pause"`, `name="schedule" value="nightly"`, `name="back" value="/"`} {
			if !strings.Contains(row, want) {
				t.Errorf("nightly's row lacks %s:\n%s", want, row)
			}
		}
		csrf := b.csrf("/")
		act := func(action string, form url.Values, back string) string {
			t.Helper()
			form.Set("csrf", csrf)
			form.Set("back", back)
			resp, body := b.post("/actions/"+action, form)
			if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != back {
				t.Fatalf("POST /actions/%s %v = %d to %q, want 303 to %s:\n%s", action, form, resp.StatusCode, loc, back, body)
			}
			_, page := b.get(back)
			flash := between(t, page, `<p id="flash"`, `</p>`)
			if _, again := b.get(back); strings.Contains(again, `id="flash"`) {
				t.Errorf("the flash of %s shows twice", action)
			}
			return flash
		}
		logged := func(action, target string) {
			t.Helper()
			want := fmt.Sprintf(`msg="dashboard action" component=dashboard action=%s who=ann remote_addr=127.0.0.1 %s`, action, target)
			if !strings.Contains(s.logs.String(), want) {
				t.Errorf("no log line %s in:\n%s", want, s.logs.String())
			}
		}
		paused := func() bool {
			t.Helper()
			cs, err := q.Cursors(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return cs["nightly"].Paused
		}

		// pause, then resume, as -pause and -resume.
		if flash := act("pause", url.Values{"schedule": {"nightly"}}, "/schedules/nightly"); !strings.Contains(flash, "Paused nightly") {
			t.Errorf("flash after pause: %s", flash)
		}
		if !paused() {
			t.Fatal("nightly is not paused after the pause action")
		}
		logged("pause", "schedule=nightly")
		_, page := b.get("/schedules/nightly")
		if row := between(t, page, `<tr data-schedule="nightly"`, `</tr>`); !strings.Contains(row, `data-action="resume"`) || strings.Contains(row, `data-action="pause"`) {
			t.Errorf("a paused schedule's row offers no resume, or still pause:\n%s", row)
		}
		if flash := act("resume", url.Values{"schedule": {"nightly"}}, "/"); !strings.Contains(flash, "Resumed nightly") {
			t.Errorf("flash after resume: %s", flash)
		}
		if paused() {
			t.Fatal("nightly is still paused after the resume action")
		}
		logged("resume", "schedule=nightly")

		// trigger one item of a fan-out, as -trigger fan -item acme.
		_, page = b.get("/schedules/fan")
		item := between(t, page, `href="/schedules/fan?item=tenant%3dacme"`, `</div>`)
		if !strings.Contains(item, `data-action="trigger"`) || !strings.Contains(item, `name="item" value="tenant=acme"`) {
			t.Errorf("the item acme has no trigger form:\n%s", item)
		}
		flash := act("trigger", url.Values{"schedule": {"fan"}, "item": {"tenant=acme"}}, "/schedules/fan?item=tenant%3Dacme")
		jobs, err := q.List(ctx, queue.Filter{Schedule: "fan"})
		if err != nil {
			t.Fatal(err)
		}
		var manual []*queue.Job
		for _, j := range jobs {
			if j.ScheduledAt.IsZero() {
				manual = append(manual, j)
			}
		}
		if len(manual) != 1 || manual[0].Item != "tenant=acme" || manual[0].State != queue.StatePending {
			t.Fatalf("after trigger fan acme: manual jobs %+v, want one pending for tenant=acme", manual)
		}
		if !strings.Contains(flash, fmt.Sprintf("Triggered fan item tenant=acme: job %d enqueued", manual[0].ID)) {
			t.Errorf("flash after trigger: %s", flash)
		}
		logged("trigger", `schedule=fan item="tenant=acme"`)

		// retry the dead job, as -retry.
		_, page = b.get("/jobs?state=dead")
		if row := between(t, page, fmt.Sprintf(`<tr data-job-id="%d">`, f.dead), `</tr>`); !strings.Contains(row, `data-action="retry"`) {
			t.Errorf("the dead job's row has no retry form:\n%s", row)
		}
		back := "/runs/" + strconv.FormatInt(f.dead, 10)
		if flash := act("retry", url.Values{"job": {strconv.FormatInt(f.dead, 10)}}, back); !strings.Contains(flash, "made pending") {
			t.Errorf("flash after retry: %s", flash)
		}
		if j, err := q.Job(ctx, f.dead); err != nil || j.State != queue.StatePending {
			t.Fatalf("job %d after retry: %+v, %v; want pending", f.dead, j, err)
		}
		logged("retry", fmt.Sprintf("job_id=%d", f.dead))
		if flash := act("retry", url.Values{"job": {strconv.FormatInt(f.done, 10)}}, "/"); !strings.Contains(flash, "is done, not dead") {
			t.Errorf("flash after retrying a done job: %s", flash)
		}

		// cancel a pending job at once, and a running one by request.
		_, page = b.get("/runs/" + strconv.FormatInt(f.pending, 10))
		if !strings.Contains(page, `data-action="cancel"`) {
			t.Errorf("the pending job's page has no cancel form:\n%s", page)
		}
		if flash := act("cancel", url.Values{"job": {strconv.FormatInt(f.pending, 10)}}, "/jobs"); !strings.Contains(flash, "cancelled") {
			t.Errorf("flash after cancel: %s", flash)
		}
		if j, err := q.Job(ctx, f.pending); err != nil || j.State != queue.StateCancelled {
			t.Fatalf("job %d after cancel: %+v, %v; want cancelled", f.pending, j, err)
		}
		logged("cancel", fmt.Sprintf("job_id=%d", f.pending))
		if flash := act("cancel", url.Values{"job": {strconv.FormatInt(f.running, 10)}}, "/jobs"); !strings.Contains(flash, "cancel requested") {
			t.Errorf("flash after cancelling a running job: %s", flash)
		}
		reqs, err := q.Engine().CancelRequests(ctx, "node1-pool")
		if err != nil || len(reqs) != 1 || reqs[0].ID != f.running || reqs[0].By != "ann (dashboard, from 127.0.0.1)" {
			t.Fatalf("cancel requests %+v, %v; want one on job %d by ann from the dashboard", reqs, err, f.running)
		}
	})
}

// TestActionsRefused: an action without the session's CSRF token, from
// another site, when actions are disabled, or without a login, is refused
// and changes nothing; a back field that leaves the site comes back home.
func TestActionsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(now)
	q := openQueue(t, t.TempDir()+"/q.db", clk)
	seed(t, q)
	cfg := parseConfig(t)
	s := newSite(t, q, cfg, credentials(t, true), clk)
	b := s.browser(t)
	b.login(annLogin)
	csrf := b.csrf("/")
	pause := url.Values{"schedule": {"nightly"}}
	with := func(v url.Values, k, val string) url.Values {
		out := url.Values{}
		for kk, vv := range v {
			out[kk] = vv
		}
		out.Set(k, val)
		return out
	}

	tests := []struct {
		name    string
		b       *browser
		form    url.Values
		headers []string
		status  int
	}{
		{"no csrf", b, pause, nil, http.StatusForbidden},
		{"wrong csrf", b, with(pause, "csrf", csrf+"x"), nil, http.StatusForbidden},
		{"another session's csrf", b, with(pause, "csrf", "AAAA"), nil, http.StatusForbidden},
		{"cross-site fetch", b, with(pause, "csrf", csrf), []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"other origin", b, with(pause, "csrf", csrf), []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"not logged in", s.browser(t), with(pause, "csrf", csrf), nil, http.StatusSeeOther},
	}
	for _, tt := range tests {
		resp, _ := tt.b.post("/actions/pause", tt.form, tt.headers...)
		if resp.StatusCode != tt.status {
			t.Errorf("%s: POST /actions/pause = %d, want %d", tt.name, resp.StatusCode, tt.status)
		}
		if tt.status == http.StatusSeeOther && resp.Header.Get("Location") != "/login" {
			t.Errorf("%s: sent to %q, want /login", tt.name, resp.Header.Get("Location"))
		}
	}
	if cs, err := q.Cursors(ctx); err != nil || cs["nightly"].Paused {
		t.Fatalf("a refused pause paused nightly (%v)", err)
	}
	if strings.Contains(s.logs.String(), `msg="dashboard action"`) {
		t.Errorf("a refused action is logged as done:\n%s", s.logs.String())
	}

	for _, evil := range []string{"https://evil.example/", "//evil.example/", "/\\evil.example"} {
		resp, _ := b.post("/actions/pause", url.Values{"csrf": {csrf}, "schedule": {"nightly"}, "back": {evil}})
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/" {
			t.Errorf("back %q: %d to %q, want 303 to /", evil, resp.StatusCode, loc)
		}
	}
	if resp, _ := b.post("/actions/explode", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /actions/explode = %d, want 404", resp.StatusCode)
	}

	// Actions disabled: logged in, no form, every POST refused.
	ro := newSite(t, q, cfg, credentials(t, false), clk)
	rb := ro.browser(t)
	rb.login(annLogin)
	rcsrf := rb.csrf("/")
	if _, body := rb.get("/"); strings.Contains(body, "data-action=") {
		t.Errorf("actions disabled, yet the page has action forms")
	}
	for _, action := range []string{"trigger", "pause", "resume", "retry", "cancel"} {
		if resp, _ := rb.post("/actions/"+action, url.Values{"csrf": {rcsrf}, "schedule": {"nightly"}, "job": {"1"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("actions disabled: POST /actions/%s = %d, want 403", action, resp.StatusCode)
		}
	}
}

// TestFormsOnlyWhenActing: Session's forms exist only when it may act, and
// per a job's state.
func TestFormsOnlyWhenActing(t *testing.T) {
	t.Parallel()
	acting := Session{Who: "ann", Actions: true, CSRF: "c", Back: "/jobs"}
	reading := Session{Who: "ann", CSRF: "c"}
	if f := reading.ScheduleForms("nightly", false); f != nil {
		t.Errorf("read-only ScheduleForms = %+v, want none", f)
	}
	if f := reading.JobForms(1, "dead"); f != nil {
		t.Errorf("read-only JobForms = %+v, want none", f)
	}
	for state, want := range map[string]string{"dead": "retry", "pending": "cancel", "running": "cancel", "done": "", "cancelled": ""} {
		got := ""
		if f := acting.JobForms(7, state); len(f) == 1 {
			got = f[0].Action
			if f[0].Job != 7 || f[0].CSRF != "c" || f[0].Back != "/jobs" {
				t.Errorf("JobForms(7, %s) = %+v", state, f[0])
			}
		}
		if got != want {
			t.Errorf("JobForms(%s) = %q, want %q", state, got, want)
		}
	}
	if f := acting.ScheduleForms("nightly", true); len(f) != 2 || f[0].Action != "trigger" || f[1].Action != "resume" {
		t.Errorf("ScheduleForms(paused) = %+v, want trigger and resume", f)
	}
}
