package chaos

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboard drives the daemon's dashboard in a real headless Chromium,
// as an operator would: one browser, shared by the subtests, each with a
// daemon of its own.
//
//   - pages: a daemon whose schedules produced every outcome (done,
//     retried then done, dead, running, a fan-out in another zone, a paused
//     schedule, a job waiting at its task's concurrency limit). Each page
//     (/, /schedules/NAME, /runs/ID, /jobs with filters and paging, /alarms)
//     is read against what the CLI reads from the database.
//   - actions: with actions enabled and a token (hashed by -hash-password),
//     an operator logs in through the form, pauses and resumes a schedule,
//     triggers a run and cancels it, triggers one item of a fan-out,
//     retries a dead job, and sees each effect on the page (#flash, the
//     state shown) and through the CLI; each action is logged with who did
//     it; forms without the CSRF field, or with a forged one, are refused
//     with 403 and change nothing; logged out, the pages are read-only.
//
// Every page load fails the test on a console error, an uncaught exception,
// a browser log error (a Content-Security-Policy violation is one) or a page
// asset that did not load. Screenshots of the main pages at desktop and
// phone widths go to $SCHEDULER_SCREENSHOTS (see newBrowser).
func TestDashboard(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	t.Run("pages", func(t *testing.T) {
		t.Parallel()
		testDashboardPages(t, b)
	})
	t.Run("actions", func(t *testing.T) {
		t.Parallel()
		testDashboardActions(t, b)
	})
}

// dashboardPagesConfig has a schedule for each outcome the pages show:
// nightly-report succeeds, sync-invoices fails once then succeeds,
// export-ledger dies, customer-digest fans out in another zone, reindex
// runs for ten minutes one job at a time (so that a second one waits at
// the limit), and purge-archive is paused. Their instants are daily and in the
// past (backfilled), at hours ({{H6}} is the hour 6 hours from now, in the
// schedule's zone) that do not come while the test reads the pages. The names are an operator's, since the screenshot of the
// schedules page is the README's.
const dashboardPagesConfig = `
[scheduler]
workers = 4
shutdown_grace = "1s"

[http]
listen = "127.0.0.1:0"

[tasks.report]
command = ["{{REC}}", "-file", "{{RECORD}}"]

[tasks.sync]
command = ["/bin/sh", "-c", "echo attempt $SCHEDULER_ATTEMPT; [ $SCHEDULER_ATTEMPT -ge 2 ]"]
max_attempts = 3
backoff = "1s"

[tasks.export]
command = ["{{REC}}", "-file", "{{RECORD}}", "-exit", "3", "-exit-unless", "{{DIR}}/fixed"]
max_attempts = 2
backoff = "1s"

[tasks.reindex]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep", "10m"]
concurrency = 1
kill_grace = "1s"

[tasks.page-ops]
command = ["/bin/sh", "-c", "cat >/dev/null"]

[[schedule]]
name = "nightly-report"
cron = "0 {{H6}} * * *"
task = "report"

[[schedule]]
name = "sync-invoices"
cron = "30 {{H7}} * * *"
task = "sync"

[[schedule]]
name = "export-ledger"
cron = "0 {{H8}} * * *"
task = "export"
deadline = "1h"
notify = ["page-ops"]

[[schedule]]
name = "customer-digest"
cron = "0 {{H9}} * * *"
timezone = "Europe/Istanbul"
task = "report"
for_each = [ { customer = "acme" }, { customer = "globex" }, { customer = "initech" } ]

[[schedule]]
name = "reindex"
cron = "0 {{H10}} * * *"
task = "reindex"

[[schedule]]
name = "purge-archive"
cron = "0 {{H11}} * * *"
task = "report"
`

// listedJob is a job as `scheduler -jobs -json` and `-job ID -json` show it.
type listedJob struct {
	ID          int64  `json:"id"`
	Key         string `json:"key"`
	Type        string `json:"type"`
	State       string `json:"state"`
	Attempt     int    `json:"attempt"`
	Schedule    string `json:"schedule"`
	Item        string `json:"item"`
	ScheduledAt string `json:"scheduled_at"`
	Owner       string `json:"owner"`
	LastError   string `json:"last_error"`
	Attempts    []struct {
		Number  int    `json:"number"`
		Worker  string `json:"worker"`
		Outcome string `json:"outcome"`
		Error   string `json:"error"`
		Output  string `json:"output"`
	} `json:"attempts"`
}

// jobs lists the jobs the CLI finds with the filter args, newest first.
func (s *site) jobs(args ...string) []listedJob {
	s.t.Helper()
	var js []listedJob
	out := s.mustCLI(append([]string{"-jobs", "-json", "-limit", "1000"}, args...)...)
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		s.t.Fatalf("-jobs %v -json: %v\n%s", args, err, out)
	}
	return js
}

// fullJob shows one job with its attempts through the CLI.
func (s *site) fullJob(id int64) listedJob {
	s.t.Helper()
	var j listedJob
	out := s.mustCLI("-job", strconv.FormatInt(id, 10), "-json")
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		s.t.Fatalf("-job %d -json: %v\n%s", id, err, out)
	}
	return j
}

// statusSchedule is a schedule as `scheduler -status -json` shows it.
type statusSchedule struct {
	Name          string  `json:"name"`
	Zone          *string `json:"zone"`
	Paused        bool    `json:"paused"`
	NextRun       *string `json:"next_run"`
	DeadlineState string  `json:"deadline_state"`
}

// schedules returns the schedules of -status -json by name.
func (s *site) schedules() map[string]statusSchedule {
	s.t.Helper()
	var st struct {
		Schedules []statusSchedule `json:"schedules"`
	}
	out := s.mustCLI("-status", "-json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		s.t.Fatalf("-status -json: %v\n%s", err, out)
	}
	m := map[string]statusSchedule{}
	for _, sc := range st.Schedules {
		m[sc.Name] = sc
	}
	return m
}

// listedAlarm is an alarm as `scheduler -alarms -json` shows it.
type listedAlarm struct {
	ID       int64  `json:"id"`
	Schedule string `json:"schedule"`
	Kind     string `json:"kind"`
	Open     bool   `json:"open"`
}

// startDashboard starts a daemon for s and returns it with the base URL of
// its dashboard, read from the address it logs that it listens on.
func startDashboard(t *testing.T, s *site) (*daemon, string) {
	t.Helper()
	d := s.start()
	d.waitMsg("http listening", 1)
	addr, _ := d.entries("http listening")[0]["listen"].(string)
	if addr == "" {
		t.Fatalf("the daemon logged no listen address:\n%s", d.log())
	}
	return d, "http://" + addr
}

// backfill enqueues schedule name's instants of the last days days, up to
// now, in its zone.
func (s *site) backfill(name string, loc *time.Location, days int) {
	s.t.Helper()
	now := time.Now().In(loc)
	s.mustCLI("-backfill", name, "-from", now.AddDate(0, 0, -days).Format(time.DateOnly), "-to", now.Format(time.DateOnly))
}

// outcome is what a strip cell should say of an instant's job.
func cellOutcome(j listedJob) string {
	if j.State == "done" && j.Attempt > 1 {
		return "retried"
	}
	return j.State
}

// cell is one instant of a strip as the page shows it.
type cell struct {
	Instant string `json:"instant"`
	Outcome string `json:"outcome"`
	Title   string `json:"title"`
	Href    string `json:"href"`
}

// strip reads the cells of the strip sel.
func (p *tab) strip(sel string) []cell {
	p.t.Helper()
	return evalJS[[]cell](p, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(a => ({
		instant: a.dataset.instant, outcome: a.dataset.outcome, title: a.title || '', href: a.getAttribute('href') || ''}))`,
		sel+" a.cell"))
}

// checkStrip checks the cells against the jobs of their instants: at most
// 60, oldest first, in the zone, each job's instant shown with its outcome
// (the most severe of its items' for a fan-out).
func checkStrip(t *testing.T, where string, cells []cell, jobs []listedJob, loc *time.Location) {
	t.Helper()
	if len(cells) == 0 || len(cells) > 60 {
		t.Errorf("%s: %d cells, want 1 to 60", where, len(cells))
		return
	}
	shown := map[time.Time]cell{}
	var prev time.Time
	for i, c := range cells {
		at, err := time.Parse(time.RFC3339, c.Instant)
		if err != nil {
			t.Errorf("%s: cell %d: data-instant %q is not RFC 3339", where, i, c.Instant)
			continue
		}
		if _, off := at.Zone(); func() int { _, o := at.In(loc).Zone(); return o }() != off {
			t.Errorf("%s: cell %d: data-instant %q is not in the schedule's zone %s", where, i, c.Instant, loc)
		}
		if i > 0 && !at.After(prev) {
			t.Errorf("%s: cell %d: %s after %s: want the oldest first", where, i, c.Instant, prev.Format(time.RFC3339))
		}
		prev = at
		if c.Title == "" {
			t.Errorf("%s: cell %s has no title saying what happened", where, c.Instant)
		}
		if !strings.HasPrefix(c.Href, "/run") {
			t.Errorf("%s: cell %s links to %q, want a run page", where, c.Instant, c.Href)
		}
		shown[at.UTC()] = c
	}
	oldest, _ := time.Parse(time.RFC3339, cells[0].Instant)
	severity := []string{"done", "retried", "cancelled", "pending", "running", "dead"}
	want := map[time.Time]string{}
	for _, j := range jobs {
		at, err := time.Parse(time.RFC3339, j.ScheduledAt)
		if err != nil || at.Before(oldest) {
			continue
		}
		if o := cellOutcome(j); slices.Index(severity, o) > slices.Index(severity, want[at]) {
			want[at] = o
		}
	}
	if len(want) == 0 {
		t.Errorf("%s: no job's instant is among the %d cells from %s", where, len(cells), cells[0].Instant)
	}
	for at, o := range want {
		c, ok := shown[at]
		switch {
		case !ok:
			t.Errorf("%s: no cell for the instant %s, which has a %s job", where, at.In(loc).Format(time.RFC3339), o)
		case c.Outcome != o:
			t.Errorf("%s: cell %s says %q, want %q (title %q)", where, c.Instant, c.Outcome, o, c.Title)
		}
	}
}

func testDashboardPages(t *testing.T, b *browser) {
	istanbul, err := time.LoadLocation("Europe/Istanbul")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	hours := strings.NewReplacer(
		"{{H6}}", strconv.Itoa(now.Add(6*time.Hour).UTC().Hour()),
		"{{H7}}", strconv.Itoa(now.Add(7*time.Hour).UTC().Hour()),
		"{{H8}}", strconv.Itoa(now.Add(8*time.Hour).UTC().Hour()),
		"{{H9}}", strconv.Itoa(now.Add(9*time.Hour).In(istanbul).Hour()),
		"{{H10}}", strconv.Itoa(now.Add(10*time.Hour).UTC().Hour()),
		"{{H11}}", strconv.Itoa(now.Add(11*time.Hour).UTC().Hour()))
	s := newSite(t, hours.Replace(dashboardPagesConfig))
	_, base := startDashboard(t, s)
	s.mustCLI("-pause", "purge-archive")
	s.backfill("nightly-report", time.UTC, 79)
	s.backfill("sync-invoices", time.UTC, 2)
	s.backfill("customer-digest", istanbul, 2)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	s.mustCLI("-backfill", "export-ledger", "-from", yesterday, "-to", yesterday)
	s.mustCLI("-backfill", "reindex", "-from", yesterday, "-to", yesterday)
	eventually(t, "every backfilled job finished, reindex's running, export-ledger's dead alarm raised", func() bool {
		for _, j := range s.jobs() {
			if (j.Schedule == "reindex") != (j.State == "running") || j.State == "pending" {
				return false
			}
		}
		var as []listedAlarm
		json.Unmarshal([]byte(s.mustCLI("-alarms", "-json")), &as)
		return len(as) > 0
	})
	// A second reindex job waits: the task runs one at a time.
	waiting, _ := s.trigger("reindex")

	p := b.open(t, base)

	// The schedules.
	p.load("/")
	status := s.schedules()
	names := evalJS[[]string](p, `Array.from(document.querySelectorAll('table#schedules tr[data-schedule]')).map(r => r.dataset.schedule)`)
	var want []string
	for n := range status {
		want = append(want, n)
	}
	slices.Sort(want)
	if got := slices.Sorted(slices.Values(names)); !slices.Equal(got, want) {
		t.Errorf("/ shows schedules %v, want %v", got, want)
	}
	all := s.jobs()
	bySchedule := map[string][]listedJob{}
	for _, j := range all {
		bySchedule[j.Schedule] = append(bySchedule[j.Schedule], j)
	}
	for _, n := range want {
		row := fmt.Sprintf(`table#schedules tr[data-schedule=%q]`, n)
		sc := status[n]
		loc := time.UTC
		if n == "customer-digest" {
			loc = istanbul
		}
		state := "active"
		if sc.Paused {
			state = "paused"
		}
		if got := p.stateText(row + " td.state"); got != state {
			t.Errorf("/: %s state %q, want %q", n, got, state)
		}
		deadline := sc.DeadlineState // one rule: the dashboard says what -status says
		if deadline == "" {
			deadline = "-"
		}
		if got := p.text(row + " td.deadline"); got != deadline {
			t.Errorf("/: %s deadline %q, want %q (-status says %q)", n, got, deadline, sc.DeadlineState)
		}
		if got := p.text(row + " td.expr"); !strings.Contains(got, loc.String()) {
			t.Errorf("/: %s expression %q does not name its zone %s", n, got, loc)
		}
		next := p.text(row + " td.next")
		if sc.NextRun != nil {
			at, _ := time.Parse(time.RFC3339, *sc.NextRun)
			at = at.In(loc)
			if !strings.Contains(next, at.Format("15:04")) || !strings.Contains(next, "in ") {
				t.Errorf("/: %s next runs %q, want %s in the schedule's zone, and how long until it", n, next, at.Format(time.RFC3339))
			}
			if loc == istanbul && !strings.Contains(next, "+03:00") {
				t.Errorf("/: %s next runs %q, want the offset +03:00", n, next)
			}
			for _, li := range evalJS[[]string](p, fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.innerText)`, row+" td.next li")) {
				if !regexp.MustCompile(`\bin \d+ (s|min|h|d)\b`).MatchString(li) {
					t.Errorf("/: %s next run %q does not say how long until it (\"in 3 h\")", n, li)
				}
			}
		}
		if href := evalJS[string](p, fmt.Sprintf(`document.querySelector(%q).getAttribute('href')`, row+` a[href^="/schedules/"]`)); href != "/schedules/"+url.PathEscape(n) {
			t.Errorf("/: %s links to %q, want /schedules/%s", n, href, n)
		}
		if n != "purge-archive" {
			checkStrip(t, "/ "+n, p.strip(row+" div.strip"), bySchedule[n], loc)
		}
	}
	p.screenshots("schedules")

	// A fan-out item's strip, and a schedule's page.
	p.load("/schedules/customer-digest?item=" + url.QueryEscape("customer=acme"))
	var acme []listedJob
	for _, j := range bySchedule["customer-digest"] {
		if j.Item == "customer=acme" {
			acme = append(acme, j)
		}
	}
	checkStrip(t, "/schedules/customer-digest item customer=acme", p.strip(`div.strip[data-item="customer=acme"]`), acme, istanbul)
	p.load("/schedules/nightly-report")
	checkStrip(t, "/schedules/nightly-report", p.strip("div.strip"), bySchedule["nightly-report"], time.UTC)
	p.screenshots("schedule")

	// Runs: one retried then done, one dead, one running, one waiting.
	flaky := s.fullJob(bySchedule["sync-invoices"][0].ID)
	dead := s.fullJob(bySchedule["export-ledger"][0].ID)
	running := s.fullJob(bySchedule["reindex"][len(bySchedule["reindex"])-1].ID)
	for _, j := range []listedJob{flaky, dead, running} {
		where := fmt.Sprintf("/runs/%d", j.ID)
		p.load(where)
		p.checkRun(where, j)
	}
	p.load(fmt.Sprintf("/runs/%d", running.ID))
	if got := p.text("#lease"); running.Owner == "" || !strings.Contains(got, running.Owner) {
		t.Errorf("/runs/%d: lease %q, want its holder %q", running.ID, got, running.Owner)
	}
	p.load(fmt.Sprintf("/runs/%d", flaky.ID))
	p.screenshots("run")
	p.load("/runs/" + waiting)
	if why := p.text("#why"); !strings.Contains(strings.ToLower(why), "concurrency") {
		t.Errorf("/runs/%s of a job at its task's concurrency limit says why it waits: %q, want the concurrency limit", waiting, why)
	}
	p.load(fmt.Sprintf("/run?schedule=export-ledger&instant=%s&item=", url.QueryEscape(dead.ScheduledAt)))
	if got, want := p.path(), fmt.Sprintf("/runs/%d", dead.ID); got != want {
		t.Errorf("/run?schedule=export-ledger&instant=%s led to %s, want %s", dead.ScheduledAt, got, want)
	}
	// A person clicks the dead cell of the strip and reaches the run.
	p.load("/")
	if st := p.clickLink(`table#schedules tr[data-schedule="export-ledger"] div.strip a.cell[data-outcome="dead"]`); st != 200 {
		t.Errorf("the dead cell of export-ledger led to status %d", st)
	}
	p.ready("the run of the dead cell")
	if got, want := p.path(), fmt.Sprintf("/runs/%d", dead.ID); got != want {
		t.Errorf("the dead cell of export-ledger led to %s, want %s", got, want)
	}

	// Jobs: every job, newest first, page by page.
	all = s.jobs()
	p.load("/jobs")
	var shown []int64
	for pages := 1; ; pages++ {
		ids := p.jobIDs()
		if len(ids) == 0 {
			t.Fatalf("/jobs page %d shows no job", pages)
		}
		shown = append(shown, ids...)
		if p.count("a#older") == 0 {
			t.Logf("/jobs: %d jobs on %d pages", len(shown), pages)
			break
		}
		href := evalJS[string](p, `document.querySelector('a#older').getAttribute('href')`)
		if !strings.Contains(href, fmt.Sprintf("before=%d", ids[len(ids)-1])) {
			t.Errorf("/jobs page %d: a#older links to %q, want before=%d, the lowest id shown", pages, href, ids[len(ids)-1])
		}
		if pages == 1 {
			p.screenshots("jobs")
		}
		if st := p.clickLink("a#older"); st != 200 {
			t.Fatalf("a#older led to status %d", st)
		}
		p.ready(fmt.Sprintf("/jobs page %d", pages+1))
		if pages > 20 {
			t.Fatalf("/jobs: more than 20 pages for %d jobs", len(all))
		}
	}
	var ids []int64
	for _, j := range all {
		ids = append(ids, j.ID)
	}
	if !slices.Equal(shown, ids) {
		t.Errorf("/jobs pages show ids\n%v\nwant, as -jobs lists them,\n%v", shown, ids)
	}

	// The filter form, as a person fills it: the dead jobs, with their error.
	p.load("/jobs")
	p.fill(`form#filter [name="state"]`, "dead")
	if st := p.submit("form#filter"); st != 200 {
		t.Errorf("the filter form led to status %d", st)
	}
	p.ready("/jobs filtered by the form")
	if q := p.path(); !strings.Contains(q, "state=dead") {
		t.Errorf("the filter form led to %s, want state=dead in its query", q)
	}
	p.checkJobs("/jobs?state=dead", s.jobs("-state", "dead"))
	for _, j := range s.jobs("-state", "dead") {
		e := p.text(fmt.Sprintf(`tr[data-job-id="%d"] td.error`, j.ID))
		if first := strings.SplitN(j.LastError, "\n", 2)[0]; e == "" || !strings.Contains(j.LastError, e) && !strings.Contains(e, first) {
			t.Errorf("/jobs?state=dead: job %d shows error %q, want its last error %q", j.ID, e, j.LastError)
		}
	}
	for _, f := range []struct{ query, flag, value string }{
		{"task", "-task", "sync"},
		{"schedule", "-schedule", "customer-digest"},
		{"key", "-key", "customer-digest|customer=acme|"},
		{"state", "-state", "running"},
	} {
		where := "/jobs?" + f.query + "=" + url.QueryEscape(f.value)
		p.load(where)
		p.checkJobs(where, s.jobs(f.flag, f.value))
	}

	// Alarms.
	var alarms []listedAlarm
	if err := json.Unmarshal([]byte(s.mustCLI("-alarms", "-json")), &alarms); err != nil {
		t.Fatal(err)
	}
	p.load("/alarms")
	for _, a := range alarms {
		row := p.text(fmt.Sprintf(`table#alarms tr[data-alarm-id="%d"]`, a.ID))
		if !strings.Contains(row, a.Kind) || !strings.Contains(row, a.Schedule) {
			t.Errorf("/alarms: alarm %d reads %q, want its kind %s and schedule %s", a.ID, row, a.Kind, a.Schedule)
		}
	}
	if n := p.count("table#alarms tr[data-alarm-id]"); n != len(alarms) {
		t.Errorf("/alarms shows %d alarms, want %d", n, len(alarms))
	}
	for _, a := range alarms {
		row := p.text(fmt.Sprintf(`table#alarms tr[data-alarm-id="%d"]`, a.ID))
		if strings.Contains(row, "closed") == a.Open {
			t.Errorf("/alarms: alarm %d reads %q, want it open: %v", a.ID, row, a.Open)
		}
	}
	// Each notification job is shown with its incident, linked.
	notified := s.jobs("-task", "page-ops")
	if len(notified) == 0 {
		t.Errorf("no notification job ran for %d alarms", len(alarms))
	}
	for _, j := range notified {
		if p.count(fmt.Sprintf(`table#incidents tr[data-incident-id] a[href="/runs/%d"]`, j.ID)) == 0 {
			t.Errorf("/alarms: the notification job %d (%s) is not shown with its incident", j.ID, j.Key)
		}
	}
	p.screenshots("alarms")
}

// checkRun reads the run page shown against job j from the CLI.
func (p *tab) checkRun(where string, j listedJob) {
	p.t.Helper()
	t := p.t
	if got := p.text(`#run [data-field="state"]`); got != j.State {
		t.Errorf("%s: state %q, want %q", where, got, j.State)
	}
	if got := p.text(`#run [data-field="schedule"]`); got != j.Schedule {
		t.Errorf("%s: schedule %q, want %q", where, got, j.Schedule)
	}
	at, _ := time.Parse(time.RFC3339, j.ScheduledAt)
	if got := p.text(`#run [data-field="instant"]`); !strings.Contains(got, at.Format("15:04")) || !strings.Contains(got, at.Format(time.DateOnly)) {
		t.Errorf("%s: instant %q, want %s", where, got, j.ScheduledAt)
	}
	rows := evalJS[[]string](p, `Array.from(document.querySelectorAll('table#attempts tr.attempt')).map(r => r.innerText)`)
	want := len(j.Attempts)
	if j.State == "running" {
		want++ // the attempt under way, which -job lists once it ends
	}
	if len(rows) != want {
		t.Errorf("%s: %d attempts shown, want %d", where, len(rows), want)
		return
	}
	for _, a := range j.Attempts {
		found := false
		for _, r := range rows {
			found = found || strings.Contains(r, a.Outcome) && (a.Error == "" || strings.Contains(r, strings.SplitN(a.Error, "\n", 2)[0]))
		}
		if !found {
			t.Errorf("%s: no attempt row shows attempt %d's outcome %q and error %q; rows:\n%s", where, a.Number, a.Outcome, a.Error, strings.Join(rows, "\n"))
		}
	}
}

// jobIDs reads the ids of the rows of table#jobs, in page order.
func (p *tab) jobIDs() []int64 {
	p.t.Helper()
	return evalJS[[]int64](p, `Array.from(document.querySelectorAll('table#jobs tr[data-job-id]')).map(r => Number(r.dataset.jobId))`)
}

// checkJobs checks that the jobs page shown lists want, newest first, the
// first page of them when they are many.
func (p *tab) checkJobs(where string, want []listedJob) {
	p.t.Helper()
	got := p.jobIDs()
	var ids []int64
	for _, j := range want {
		ids = append(ids, j.ID)
	}
	if len(got) == 0 && len(ids) > 0 || len(got) > len(ids) || !slices.Equal(got, ids[:len(got)]) {
		p.t.Errorf("%s shows jobs %v, want %v (as -jobs lists them, newest first)", where, got, ids)
	}
	if len(got) < len(ids) && p.count("a#older") == 0 {
		p.t.Errorf("%s shows %d of %d jobs and no a#older link", where, len(got), len(ids))
	}
}

// dashboardActionsConfig lets the holder of a token act on the dashboard.
// manual's runs last ten minutes unless cancelled; dies fails until
// {{DIR}}/fixed exists. Their instants are yearly: none comes during the
// test, whose runs are triggered. The short lease makes the pool heartbeat every
// second: a cancel asked from the dashboard, in the daemon's own process,
// reaches the running job at the next heartbeat (the store's watch passes
// over the commits of its own process), 20 s with the default lease.
const dashboardActionsConfig = `
[scheduler]
workers = 2
shutdown_grace = "1s"
lease = "3s"

[http]
listen = "127.0.0.1:0"
actions = true
token_hash = "{{TOKEN_HASH}}"

[tasks.slow]
command = ["{{REC}}", "-file", "{{RECORD}}", "-sleep", "10m"]
kill_grace = "1s"

[tasks.ok]
command = ["{{REC}}", "-file", "{{RECORD}}"]

[tasks.fail]
command = ["{{REC}}", "-file", "{{RECORD}}", "-exit", "3", "-exit-unless", "{{DIR}}/fixed"]
max_attempts = 1

[[schedule]]
name = "manual"
cron = "0 0 1 1 *"
task = "slow"

[[schedule]]
name = "pausable"
cron = "0 4 1 1 *"
task = "ok"

[[schedule]]
name = "dies"
cron = "0 1 1 1 *"
task = "fail"

[[schedule]]
name = "digest"
cron = "0 2 1 1 *"
task = "ok"
for_each = [ { customer = "acme" }, { customer = "globex" } ]
`

// tokenHash is token's hash for the config's token_hash, as an operator
// makes it: scheduler -hash-password reading the token on standard input.
func tokenHash(t *testing.T, token string) string {
	t.Helper()
	cmd := exec.Command(binary, "-hash-password")
	cmd.Stdin = strings.NewReader(token + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scheduler -hash-password: %v", err)
	}
	h := strings.TrimSpace(string(out))
	if !strings.HasPrefix(h, "pbkdf2-sha256$") {
		t.Fatalf("scheduler -hash-password printed %q, want a pbkdf2-sha256 hash", h)
	}
	return h
}

func testDashboardActions(t *testing.T, b *browser) {
	const token = "correct horse battery staple"
	s := newSite(t, strings.ReplaceAll(dashboardActionsConfig, "{{TOKEN_HASH}}", tokenHash(t, token)))
	d, base := startDashboard(t, s)
	s.trigger("dies")
	eventually(t, "dies' job dead", func() bool {
		js := s.jobs("-schedule", "dies")
		return len(js) == 1 && js[0].State == "dead"
	})
	dead := s.jobs("-schedule", "dies")[0]

	p := b.open(t, base)

	// Read-only until logged in; a wrong token logs no one in.
	p.load("/schedules/pausable")
	if n := p.count("form[data-action]"); n != 0 {
		t.Errorf("/schedules/pausable shows %d action forms before any login, want none", n)
	}
	p.login("wrong token")
	if n := p.count("#who"); n != 0 {
		t.Errorf("a wrong token logged in as %q", p.text("#who"))
	}
	p.login(token)
	if got := p.text("#who"); got != "token" {
		t.Errorf("logged in with the token, #who says %q, want token", got)
	}

	// Pause and resume.
	p.load("/schedules/pausable")
	p.act("pause", "/schedules/pausable")
	eventually(t, "pausable paused", func() bool { return s.schedules()["pausable"].Paused })
	p.load("/")
	if got := p.stateText(`table#schedules tr[data-schedule="pausable"] td.state`); got != "paused" {
		t.Errorf("after pause, / says pausable is %q, want paused", got)
	}
	p.load("/schedules/pausable")
	p.act("resume", "/schedules/pausable")
	if s.schedules()["pausable"].Paused {
		t.Errorf("pausable is still paused after resume was acknowledged")
	}
	p.load("/")
	if got := p.stateText(`table#schedules tr[data-schedule="pausable"] td.state`); got != "active" {
		t.Errorf("after resume, / says pausable is %q, want active", got)
	}

	// Trigger a run, see it run, cancel it.
	p.load("/schedules/manual")
	p.act("trigger", "/schedules/manual")
	var run listedJob
	eventually(t, "the triggered run running", func() bool {
		js := s.jobs("-schedule", "manual")
		if len(js) == 1 {
			run = js[0]
		}
		return len(js) == 1 && js[0].State == "running"
	})
	if n := len(s.jobs("-schedule", "manual")); n != 1 {
		t.Fatalf("one click on trigger enqueued %d jobs", n)
	}
	runPage := fmt.Sprintf("/runs/%d", run.ID)
	p.load(runPage)
	if got := p.text(`#run [data-field="state"]`); got != "running" {
		t.Errorf("%s: state %q, want running", runPage, got)
	}
	p.screenshots("run-running")
	asked := time.Now()
	p.act("cancel", runPage)
	eventually(t, "the cancelled run cancelled", func() bool { return s.fullJob(run.ID).State == "cancelled" })
	t.Logf("a running job cancelled from the dashboard was cancelled %v after the click", time.Since(asked).Round(10*time.Millisecond))
	p.load(runPage)
	if got := p.text(`#run [data-field="state"]`); got != "cancelled" {
		t.Errorf("%s: state %q after cancel, want cancelled", runPage, got)
	}

	// Trigger one item of a fan-out: one job, of that item.
	p.load("/schedules/digest")
	p.actForm(`form[data-action="trigger"]:has(input[name="item"][value="customer=globex"])`, "trigger", "/schedules/digest")
	eventually(t, "the triggered item done", func() bool {
		js := s.jobs("-schedule", "digest")
		return len(js) == 1 && js[0].State == "done"
	})
	if j := s.jobs("-schedule", "digest")[0]; j.Item != "customer=globex" {
		t.Errorf("the trigger of item customer=globex ran item %q", j.Item)
	}

	// Retry the dead job, its cause fixed.
	if err := os.WriteFile(s.path("fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadPage := fmt.Sprintf("/runs/%d", dead.ID)
	p.load(deadPage)
	p.act("retry", deadPage)
	eventually(t, "the retried job done", func() bool { return s.fullJob(dead.ID).State == "done" })
	p.load(deadPage)
	if got := p.text(`#run [data-field="state"]`); got != "done" {
		t.Errorf("%s: state %q after retry, want done", deadPage, got)
	}

	// Forms without the CSRF field, or with a forged one, are refused and
	// change nothing.
	for _, forge := range []struct{ what, js string }{
		{"without its csrf field", `document.querySelector('form[data-action="pause"] input[name=csrf]').remove()`},
		{"with a forged csrf field", `document.querySelector('form[data-action="pause"] input[name=csrf]').value = 'forged'`},
	} {
		p.load("/schedules/pausable")
		evalJS[any](p, forge.js)
		if st := p.submit(`form[data-action="pause"]`); st != 403 {
			t.Errorf("a pause form %s answered %d, want 403", forge.what, st)
		}
		p.clean("the refused form")
		if s.schedules()["pausable"].Paused {
			t.Fatalf("a pause form %s paused the schedule", forge.what)
		}
	}
	p.load("/schedules/pausable")
	p.screenshots("schedule-actions")

	// Every action is logged with who did it; a cancel names them in the
	// job's history too.
	done := map[string]bool{}
	for _, e := range d.entries("dashboard action") {
		if e["who"] != "token" {
			t.Errorf("dashboard action logged as done by %v, want token: %v", e["who"], e)
		}
		done[fmt.Sprint(e["action"])] = true
	}
	for _, a := range []string{"pause", "resume", "trigger", "cancel", "retry"} {
		if !done[a] {
			t.Errorf("no %q logged as a dashboard action; the log has %v", a, d.entries("dashboard action"))
		}
	}
	if at := s.fullJob(run.ID).Attempts; len(at) == 0 || !strings.Contains(at[len(at)-1].Error, "token") {
		t.Errorf("the cancelled job's last attempt %+v does not say the token cancelled it", at)
	}

	// Logged out, the page is read-only again.
	if st := p.submit("form#logout"); st != 200 {
		t.Errorf("log out led to status %d", st)
	}
	p.clean("after logging out")
	p.load("/schedules/pausable")
	if n := p.count("#who"); n != 0 {
		t.Errorf("after logging out, #who still says %q", p.text("#who"))
	}
	if n := p.count("form[data-action]"); n != 0 {
		t.Errorf("after logging out, /schedules/pausable shows %d action forms", n)
	}
}

// login logs in through the form at /login with token and returns on the
// page it leads to.
func (p *tab) login(token string) {
	p.t.Helper()
	p.load("/login")
	p.fill(`form#login input[name="token"]`, token)
	if st := p.submit("form#login"); st >= 500 {
		p.t.Fatalf("the login answered %d", st)
	}
	p.clean("after the login")
}

// act submits the action form of kind action on the page shown and checks
// that it leads back to back with a flash message saying what was done.
func (p *tab) act(action, back string) {
	p.t.Helper()
	p.actForm(fmt.Sprintf(`form[data-action=%q]`, action), action, back)
}

// actForm is act with the form chosen by the selector form.
func (p *tab) actForm(form, action, back string) {
	p.t.Helper()
	if p.count(form+` input[name="csrf"]`) != 1 {
		p.t.Fatalf("%s: the %s form has no csrf field", p.path(), action)
	}
	if st := p.submit(form); st != 200 {
		p.t.Fatalf("%s: %s answered %d, want a redirect to a page", p.path(), action, st)
	}
	p.ready("after " + action)
	if got := evalJS[string](p, `location.pathname`); got != back {
		p.t.Errorf("%s led to %s, want back to %s", action, got, back)
	}
	if err := p.do(chromedp.WaitVisible(chromedp.CSS("#flash"))); err != nil {
		p.t.Fatalf("after %s: no #flash: %v", action, err)
	}
	if f := p.text("#flash"); f == "" {
		p.t.Errorf("after %s: #flash is empty", action)
	}
}

// stateText is the text of the state cell sel without the action forms
// that a logged-in operator sees beside it.
func (p *tab) stateText(sel string) string {
	p.t.Helper()
	v := evalJS[*string](p, fmt.Sprintf(`(e => {
		if (!e) return null;
		const c = e.cloneNode(true);
		c.querySelectorAll('form').forEach(f => f.remove());
		return c.textContent.replace(/\s+/g, ' ');
	})(document.querySelector(%q))`, sel))
	if v == nil {
		p.t.Errorf("%s: no %s", p.path(), sel)
		return ""
	}
	return strings.TrimSpace(*v)
}
