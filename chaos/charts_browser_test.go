package chaos

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
)

// chartsConfig runs one schedule every second whose command fails when
// its second is a multiple of three, against a one-second deadline.
const chartsConfig = `
[scheduler]
workers = 2
shutdown_grace = "1s"

[http]
listen = "127.0.0.1:0"

[tasks.export]
command = ["/bin/sh", "-c", "sleep 0.2; [ $(( $(date +%s) % 3 )) -ne 0 ]"]
max_attempts = 1

[[schedule]]
name = "billing-export"
cron = "@every 1s"
task = "export"
deadline = "1s"
`

// TestChartsBrowser reads the charts of /charts and of a schedule's page
// in a real headless Chromium against what the CLI reads from the
// database: a schedule runs every second, some runs fail, then it is
// paused and its jobs drain. Each chart is an SVG with a title, as many
// bars as its buckets or runs, and the jobs the CLI lists. Screenshots go
// to $SCHEDULER_SCREENSHOTS (see newBrowser) as charts-*.png and
// schedule-charts-desktop.png.
func TestChartsBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	s := newSite(t, chartsConfig)
	_, base := startDashboard(t, s)
	eventually(t, "twelve ended runs, at least one dead", func() bool {
		ended, dead := 0, 0
		for _, j := range s.jobs() {
			ended += btoi(j.State == "done" || j.State == "dead")
			dead += btoi(j.State == "dead")
		}
		return ended >= 12 && dead > 0
	})
	s.mustCLI("-pause", "billing-export")
	var ended, instants int
	eventually(t, "no job pending or running", func() bool {
		ended, instants = 0, 0
		for _, j := range s.jobs() {
			if j.State == "pending" || j.State == "running" {
				return false
			}
			ended += btoi(j.State == "done" || j.State == "dead")
			instants += btoi(j.ScheduledAt != "")
		}
		return true
	})

	p := b.open(t, base)
	p.load("/charts")
	for _, id := range []string{"runs", "latency", "depth"} {
		if n := p.count("figure#" + id + " svg[role=img] title"); n == 0 {
			t.Errorf("/charts: no titled svg #%s", id)
		}
		if n := p.count("figure#" + id + " g.bar"); n != 24 {
			t.Errorf("/charts: chart %s has %d bars, want 24 (the hours of a day)", id, n)
		}
	}
	if got := p.sumTotals("figure#runs g.bar"); got != ended {
		t.Errorf("/charts: the runs chart counts %d jobs, the CLI lists %d ended", got, ended)
	}
	if w := evalJS[float64](p, `document.querySelector('figure#runs svg').getBoundingClientRect().width`); w < 300 {
		t.Errorf("/charts: the runs chart is %v px wide", w)
	}
	p.screenshots("charts")

	p.load("/schedules/billing-export")
	if n := p.count("figure#durations g.bar"); n != min(instants, 50) {
		t.Errorf("schedule page: %d duration bars, want %d (its ended instants, at most 50)", n, min(instants, 50))
	}
	if p.count("figure#durations g.bar rect.s-dead") == 0 {
		t.Error("schedule page: no run drawn as failed")
	}
	if p.count("figure#durations line.rule.deadline") != 1 {
		t.Error("schedule page: no deadline drawn")
	}
	if got := p.sumTotals("figure#runs-hours g.bar"); got != ended {
		t.Errorf("schedule page: the hourly chart counts %d jobs, the CLI lists %d ended", got, ended)
	}
	p.elementShot("#schedule-charts", "schedule-charts-desktop")
}

// elementShot saves the element sel, at desktop width, as name.png in the
// screenshot folder.
func (p *tab) elementShot(sel, name string) {
	p.t.Helper()
	if err := p.do(chromedp.EmulateViewport(desktopWidth, desktopHeight)); err != nil {
		p.t.Fatal(err)
	}
	png, err := tabRun(p, chromedp.Screenshot(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		p.t.Fatalf("screenshot of %s: %v", sel, err)
	}
	if err := os.WriteFile(filepath.Join(p.shot, name+".png"), png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// sumTotals adds the data-total of the bars sel matches.
func (p *tab) sumTotals(sel string) int {
	p.t.Helper()
	var n int
	for _, v := range evalJS[[]string](p, `Array.from(document.querySelectorAll('`+sel+`')).map(b => b.dataset.total)`) {
		x, err := strconv.Atoi(v)
		if err != nil {
			p.t.Errorf("bar total %q: %v", v, err)
		}
		n += x
	}
	return n
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
