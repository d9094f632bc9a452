package chaos

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// consoleConfig has a schedule whose manual runs die, one whose manual
// run sleeps, and a fan-out to trigger with a payload.
const consoleConfig = `
[scheduler]
shutdown_grace = "1s"

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
command = ["{{REC}}", "-file", "{{RECORD}}", "-exit", "3"]
max_attempts = 1

[[schedule]]
name = "warehouse-load"
cron = "0 1 1 1 *"
task = "fail"

[[schedule]]
name = "long-export"
cron = "0 0 1 1 *"
task = "slow"

[[schedule]]
name = "quiet"
cron = "0 3 1 1 *"
task = "ok"

[[schedule]]
name = "digest"
cron = "0 2 1 1 *"
task = "ok"
for_each = [ { customer = "acme" }, { customer = "globex" } ]
`

// TestConsole drives the operator's console in a real headless Chromium:
// the overview marks the schedules in trouble and lists them first, with
// their manual runs; a banner says when the config file on disk is broken
// or not what the daemon runs; the daemons page shows what each worker
// runs; a schedule is triggered with a JSON payload, and a bad one is
// refused. Screenshots go to $SCHEDULER_SCREENSHOTS (see newBrowser).
func TestConsole(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	const token = "correct horse battery staple"
	config := strings.ReplaceAll(consoleConfig, "{{TOKEN_HASH}}", tokenHash(t, token))
	s := newSite(t, config)
	_, base := startDashboard(t, s)
	s.trigger("warehouse-load")
	s.trigger("long-export")
	eventually(t, "warehouse-load's run dead and long-export's running", func() bool {
		d, l := s.jobs("-schedule", "warehouse-load"), s.jobs("-schedule", "long-export")
		return len(d) == 1 && d[0].State == "dead" && len(l) == 1 && l[0].State == "running"
	})
	running := s.jobs("-schedule", "long-export")[0]
	p := b.open(t, base)
	p.login(token)

	// The overview: trouble first, marked, with its manual runs.
	p.load("/")
	order := evalJS[[]string](p, `[...document.querySelectorAll('table#schedules tbody tr')].map(r => r.dataset.schedule)`)
	if len(order) != 4 || order[0] != "warehouse-load" {
		t.Errorf("the overview lists %v, want warehouse-load (a dead run) first, though last by name", order)
	}
	if n := p.count(`tr[data-schedule="warehouse-load"].trouble .marker`); n != 1 {
		t.Errorf("warehouse-load's row has %d trouble markers, want 1", n)
	}
	if got := p.text(`tr[data-schedule="warehouse-load"] td.now a[data-count="dead"]`); got != "1 dead" {
		t.Errorf("warehouse-load's row counts %q, want 1 dead", got)
	}
	if n := p.count(`tr[data-schedule="warehouse-load"] a.cell.manual[data-outcome="dead"]`); n != 1 {
		t.Errorf("warehouse-load's strip has %d dead manual cells, want 1", n)
	}
	if got := p.text(`tr[data-schedule="long-export"] td.now a[data-count="running"]`); got != "1 running" {
		t.Errorf("long-export's row counts %q, want 1 running", got)
	}
	if n := p.count(`tr[data-schedule="quiet"].trouble`); n != 0 {
		t.Error("quiet, which never ran, is marked in trouble")
	}
	p.screenshots("console-overview")

	// The daemons page: the daemon, its pool, the job it runs.
	p.load("/daemons")
	if n := p.count(`section.daemon`); n != 1 {
		t.Fatalf("/daemons shows %d daemons, want 1", n)
	}
	if got := p.text(`section.daemon [data-busy]`); got != "1 busy" {
		t.Errorf("the daemon says %q, want 1 busy", got)
	}
	if st := p.clickLink(`section.daemon tr[data-job-id] a[href^="/runs/"]`); st != 200 {
		t.Fatalf("the running job's link answered %d", st)
	}
	if got := p.path(); got != "/runs/"+strconv.FormatInt(running.ID, 10) {
		t.Errorf("the running job's link led to %s, want /runs/%d", got, running.ID)
	}
	p.load("/daemons")
	p.screenshots("console-daemons")

	// Trigger with a payload: a bad one is refused, a good one runs.
	p.load("/schedules/digest")
	triggerWith := func(item, payload string) {
		t.Helper()
		p.fill(`#trigger select[name="item"]`, item)
		p.fill(`#trigger textarea[name="payload"]`, payload)
		p.actForm(`form[data-action="trigger-payload"]`, "trigger", "/schedules/digest")
	}
	triggerWith("customer=globex", `{"day": `)
	if f := p.text("#flash"); !strings.Contains(f, "not a JSON object") {
		t.Errorf("a bad payload's flash says %q, want not a JSON object", f)
	}
	if js := s.jobs("-schedule", "digest"); len(js) != 0 {
		t.Fatalf("a bad payload enqueued %d jobs", len(js))
	}
	p.load("/schedules/digest")
	p.fill(`#trigger select[name="item"]`, "customer=globex")
	p.fill(`#trigger textarea[name="payload"]`, `{"day": "2026-03-01"}`)
	p.screenshots("console-trigger")
	triggerWith("customer=globex", `{"day": "2026-03-01"}`)
	eventually(t, "the triggered item done", func() bool {
		js := s.jobs("-schedule", "digest")
		return len(js) == 1 && js[0].State == "done"
	})
	var j struct {
		Item    string         `json:"item"`
		Payload map[string]any `json:"payload"`
	}
	out := s.mustCLI("-job", strconv.FormatInt(s.jobs("-schedule", "digest")[0].ID, 10), "-json")
	if err := json.Unmarshal([]byte(out), &j); err != nil || j.Payload["day"] != "2026-03-01" || j.Item != "customer=globex" {
		t.Errorf("the triggered job is %s with payload %v (%v), want customer=globex with the day merged in", j.Item, j.Payload, err)
	}

	// The banner: the file broken, then edited, then as the daemon runs it.
	good, err := os.ReadFile(s.config)
	if err != nil {
		t.Fatal(err)
	}
	writeRaw(t, s.config, string(good)+"\n[[schedule]]\nname = \"bad\"\n")
	p.load("/daemons")
	if got := p.text("#banner"); !strings.Contains(got, "does not load") || !strings.Contains(got, "scheduler -check") {
		t.Errorf("with the file broken the banner says %q", got)
	}
	p.load("/")
	p.screenshots("console-banner")
	writeRaw(t, s.config, string(good)+"\n# edited\n")
	p.load("/jobs")
	if got := p.text("#banner"); !strings.Contains(got, "is not what the daemons run") || !strings.Contains(got, "reload") {
		t.Errorf("with the file edited the banner says %q", got)
	}
	writeRaw(t, s.config, string(good))
	p.load("/")
	if n := p.count("#banner"); n != 0 {
		t.Errorf("with the file as the daemon runs it, the page still has a banner: %q", p.text("#banner"))
	}
}

// writeRaw writes text to path as an editor saves it.
func writeRaw(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
