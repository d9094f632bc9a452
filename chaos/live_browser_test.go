package chaos

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// liveConfig has a command that prints a line, waits for the test to
// create a file, prints a second line, and waits for another before it
// ends; its output carries a token that redact_output masks.
const liveConfig = `
[scheduler]
shutdown_grace = "1s"

[http]
listen = "127.0.0.1:0"
actions = true
token_hash = "{{TOKEN_HASH}}"

[tasks.report]
command = ["/bin/sh", "-c", "echo 'first line, token tok-4821'; until [ -e {{DIR}}/second ]; do sleep 0.05; done; echo 'second line'; until [ -e {{DIR}}/done ]; do sleep 0.05; done"]
redact_output = ["tok-[0-9]+"]
kill_grace = "1s"

[[schedule]]
name = "nightly-report"
cron = "0 3 1 1 *"
task = "report"
`

// TestLiveOutput drives a running job's page in a real headless Chromium:
// it shows the command's first line, redacted, while the job runs, the
// second once the command printed it, without a reload, and then the job
// done, after which it no longer asks for the output. Screenshots go to
// $SCHEDULER_SCREENSHOTS (see newBrowser).
func TestLiveOutput(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	const token = "correct horse battery staple"
	s := newSite(t, strings.ReplaceAll(liveConfig, "{{TOKEN_HASH}}", tokenHash(t, token)))
	_, base := startDashboard(t, s)
	s.trigger("nightly-report")
	eventually(t, "the report running", func() bool {
		js := s.jobs("-schedule", "nightly-report")
		return len(js) == 1 && js[0].State == "running"
	})
	id := s.jobs("-schedule", "nightly-report")[0].ID
	p := b.open(t, base)
	p.login(token)
	p.load("/runs/" + strconv.FormatInt(id, 10))
	if n := p.count(`body[data-refresh]`); n != 0 {
		t.Error("the running job's page reloads as a whole")
	}
	// What the page shows now, "" while it reloads.
	shown := func() string { return textNow(p, "#live-body") }
	eventually(t, "the first line shown", func() bool { return strings.Contains(shown(), "first line, token [redacted]") })
	if got := shown(); strings.Contains(got, "tok-4821") || strings.Contains(got, "second line") {
		t.Errorf("the page shows %q, want the first line alone, redacted", got)
	}
	evalJS[bool](p, `(window.liveMark = true)`) // gone if the page reloads
	p.screenshots("live-output")

	touch(t, s.path("second"))
	eventually(t, "the second line shown", func() bool { return strings.Contains(shown(), "second line") })
	if !evalJS[bool](p, `window.liveMark === true`) {
		t.Error("the page reloaded to show the second line")
	}
	p.clean("the running job's page")

	touch(t, s.path("done"))
	eventually(t, "the job shown done", func() bool { return textNow(p, `[data-field="state"]`) == "done" })
	p.ready("the ended job's page")
	if n := p.count(`#live`); n != 0 {
		t.Error("the ended job's page still has its live part")
	}
	if out := p.text(`tr.attempt[data-outcome="done"] td[data-label="Output"]`); out != "first line, token [redacted]\nsecond line" {
		t.Errorf("the done attempt's output is %q, want both lines, redacted", out)
	}
}

// textNow is the text of the first element sel matches, or "" when there is
// none or the page is reloading (its script reloads it by itself).
func textNow(p *tab, sel string) string {
	v, err := tabRun(p, chromedp.Evaluate[string](fmt.Sprintf(`(e => e ? e.innerText : "")(document.querySelector(%q))`, sel)))
	if err != nil {
		return ""
	}
	return v
}

// touch creates the empty file path.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}
