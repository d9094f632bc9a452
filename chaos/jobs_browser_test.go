package chaos

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// jobsBrowserConfig has a schedule whose three items always die, and an
// hourly one to fill pages of the jobs list.
const jobsBrowserConfig = `
[scheduler]
workers = 4
shutdown_grace = "1s"

[http]
listen = "127.0.0.1:0"
actions = true
token_hash = "{{TOKEN_HASH}}"

[tasks.ok]
command = ["{{REC}}", "-file", "{{RECORD}}"]

[tasks.fail]
command = ["{{REC}}", "-file", "{{RECORD}}", "-exit", "3"]
max_attempts = 1

[[schedule]]
name = "hourly"
cron = "0 * * * *"
task = "ok"

[[schedule]]
name = "dies"
cron = "0 1 1 1 *"
task = "fail"
for_each = [ { customer = "acme" }, { customer = "globex" }, { customer = "initech" } ]
`

// screenHeight is the height of the screen a page of the jobs list fits.
const screenHeight = 1080

// TestJobsBrowser: the jobs list as an operator uses it in a browser. A page
// of it (50 jobs, one line each) fits a 1080-pixel screen; the search by
// state, key, schedule and payload text finds what the CLI finds; the jobs
// ticked (all of a page, less one) are discarded, then one retried, in one
// post each; and a schedule's dead jobs are retried from its page once the
// confirm box is ticked. Each result is checked through the CLI.
func TestJobsBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	const token = "correct horse battery staple"
	s := newSite(t, strings.ReplaceAll(jobsBrowserConfig, "{{TOKEN_HASH}}", tokenHash(t, token)))
	_, base := startDashboard(t, s)
	s.mustCLI("-backfill", "hourly", "-from", "2026-01-01", "-to", "2026-01-03")
	s.trigger("dies")
	eventually(t, "the three jobs of dies dead", func() bool { return len(s.jobs("-schedule", "dies", "-state", "dead")) == 3 })

	p := b.open(t, base)
	p.login(token)

	// A page of 50 jobs, one line each, fits the screen.
	p.load("/jobs")
	if n := p.count("table#jobs tbody tr[data-job-id]"); n != 50 {
		t.Fatalf("/jobs shows %d jobs, want a page of 50", n)
	}
	rows := evalJS[[]float64](p, `Array.from(document.querySelectorAll('table#jobs tbody tr')).map(r => r.getBoundingClientRect().height)`)
	body := evalJS[float64](p, `document.querySelector('table#jobs tbody').getBoundingClientRect().height`)
	tallest := 0.0
	for _, h := range rows {
		tallest = max(tallest, h)
	}
	t.Logf("/jobs: rows at most %.1f px high, 50 rows %.0f px", tallest, body)
	if 50*tallest > screenHeight || body > screenHeight {
		t.Errorf("/jobs: rows up to %.1f px high, 50 rows %.0f px: they do not fit a %d-px screen", tallest, body, screenHeight)
	}
	p.screenshots("jobs-compact")

	// The search, as a person fills it in.
	for _, f := range []struct {
		field, value, flag string
	}{
		{"payload", `"globex"`, ""},
		{"key", "dies|", "-key"},
		{"schedule", "dies", "-schedule"},
		{"state", "dead", "-state"},
	} {
		p.load("/jobs")
		p.fill(fmt.Sprintf(`form#filter [name=%q]`, f.field), f.value)
		if st := p.submit("form#filter"); st != 200 {
			t.Fatalf("the search by %s led to status %d", f.field, st)
		}
		p.ready("/jobs searched by " + f.field)
		if !strings.Contains(p.path(), f.field+"=") {
			t.Errorf("the search by %s led to %s", f.field, p.path())
		}
		if f.flag != "" {
			p.checkJobs("/jobs searched by "+f.field, s.jobs(f.flag, f.value))
			continue
		}
		var all []struct {
			listedJob
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(s.mustCLI("-jobs", "-json", "-limit", "1000")), &all); err != nil {
			t.Fatal(err)
		}
		var want []listedJob
		for _, j := range all {
			if strings.Contains(string(j.Payload), f.value) {
				want = append(want, j.listedJob)
			}
		}
		if len(want) != 1 {
			t.Fatalf("the CLI finds %d jobs whose payload holds %s, want 1", len(want), f.value)
		}
		p.checkJobs("/jobs searched by payload", want)
		if p.count("#payload-bound") != 1 {
			t.Error("/jobs does not say how far a payload search reads")
		}
	}

	// Tick every dead job, untick one, discard the others.
	dead := s.jobs("-schedule", "dies", "-state", "dead")
	p.load("/jobs?schedule=dies&state=dead")
	if err := p.do(chromedp.Click(chromedp.CSS("#select-all"), chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	if n := p.count(`input[name="job"]:checked`); n != 3 {
		t.Fatalf("the select-all box ticked %d jobs, want 3", n)
	}
	kept := dead[0]
	if err := p.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="job"][value="%d"]`, kept.ID)), chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	if got := p.text("#selected"); got != "2 jobs selected" {
		t.Errorf("with two jobs ticked the form says %q", got)
	}
	p.screenshots("jobs-selected")
	if st := p.clickLink(`form#bulk button[data-action="discard-jobs"]`); st != 200 {
		t.Fatalf("discard answered %d", st)
	}
	p.ready("after discard")
	if f := p.text("#flash"); !strings.HasPrefix(f, "Discarded 2 jobs") {
		t.Errorf("after discarding two jobs the page says %q", f)
	}
	discarded := s.jobs("-schedule", "dies", "-state", "discarded")
	if len(discarded) != 2 || len(s.jobs("-schedule", "dies", "-state", "dead")) != 1 || s.fullJob(kept.ID).State != "dead" {
		t.Fatalf("after the discard: %d discarded, want 2, and job %d still dead", len(discarded), kept.ID)
	}
	var record struct {
		DiscardedBy string `json:"discarded_by"`
	}
	if err := json.Unmarshal([]byte(s.mustCLI("-job", fmt.Sprint(discarded[0].ID), "-json")), &record); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(record.DiscardedBy, "token (dashboard, from ") {
		t.Errorf("discarded by %q, want the token from the dashboard", record.DiscardedBy)
	}

	// Retry one discarded job.
	p.load("/jobs?state=discarded")
	if err := p.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="job"][value="%d"]`, discarded[0].ID)), chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	if st := p.clickLink(`form#bulk button[data-action="retry-jobs"]`); st != 200 {
		t.Fatalf("retry answered %d", st)
	}
	p.ready("after retry")
	if f := p.text("#flash"); !strings.HasPrefix(f, fmt.Sprintf("Retried 1 job (%d)", discarded[0].ID)) {
		t.Errorf("after retrying a discarded job the page says %q", f)
	}
	eventually(t, "the retried job dead again", func() bool { return s.fullJob(discarded[0].ID).State == "dead" })
	if a := s.fullJob(discarded[0].ID).Attempts; len(a) != 2 {
		t.Errorf("the retried job has %d attempts, want 2", len(a))
	}

	// Retry every dead job of dies from its page, confirmed.
	p.load("/schedules/dies")
	if err := p.do(chromedp.Click(chromedp.CSS(`form#retry-dead input[name="confirm"]`), chromedp.NodeVisible)); err != nil {
		t.Fatal(err)
	}
	p.screenshots("schedule-retry-dead")
	p.actForm("form#retry-dead", "retry-dead", "/schedules/dies")
	if f := p.text("#flash"); !strings.HasPrefix(f, "Retried 2 jobs") {
		t.Errorf("after retrying the dead jobs of dies the page says %q", f)
	}
	eventually(t, "the retried jobs dead again", func() bool {
		return s.fullJob(kept.ID).State == "dead" && len(s.fullJob(kept.ID).Attempts) == 2
	})
}
