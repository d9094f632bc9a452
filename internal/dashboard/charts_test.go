package dashboard

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

var (
	svgRE = regexp.MustCompile(`<svg viewBox="[^"]*" role="img" aria-labelledby="([a-z-]+)-title [a-z-]+-desc" data-bars="(\d+)">`)
	barRE = regexp.MustCompile(`<g class="bar" data-total="([^"]*)">`)
)

// chartSeen is one chart of a page: its bars' totals.
type chartSeen struct {
	bars   int
	totals []string
}

// chartsOf returns the page's charts by id, checking each has a title and
// a description, and as many bars as it says.
func chartsOf(t *testing.T, page string) map[string]chartSeen {
	t.Helper()
	out := map[string]chartSeen{}
	for _, part := range strings.Split(page, `<figure class="chart"`)[1:] {
		svg := part[:strings.Index(part, "</figure>")]
		m := svgRE.FindStringSubmatch(svg)
		if m == nil {
			t.Fatalf("a chart without an accessible svg:\n%s", svg)
		}
		id := m[1]
		if !strings.Contains(svg, `<title id="`+id+`-title">`) || !strings.Contains(svg, `<desc id="`+id+`-desc">`) {
			t.Errorf("chart %s: no title or desc", id)
		}
		n, _ := strconv.Atoi(m[2])
		c := chartSeen{bars: n}
		for _, b := range barRE.FindAllStringSubmatch(svg, -1) {
			c.totals = append(c.totals, b[1])
		}
		if len(c.totals) != n {
			t.Errorf("chart %s: data-bars %d, %d bars drawn", id, n, len(c.totals))
		}
		out[id] = c
	}
	return out
}

// sum adds a count chart's totals.
func (c chartSeen) sum() int {
	n := 0
	for _, v := range c.totals {
		x, _ := strconv.Atoi(v)
		n += x
	}
	return n
}

func TestCharts(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		seed(t, q)
		srv := newServer(t, q, parseConfig(t), clk)

		charts := chartsOf(t, mustGet(t, srv, "/charts?range=week"))
		// nightly: 3 done, 1 dead; fan: 1 done, 1 dead.
		if c := charts["runs"]; c.bars != 7*24 || c.sum() != 6 {
			t.Errorf("week's runs: %d bars, %d jobs; want 168 bars, 6 jobs", c.bars, c.sum())
		}
		// Waiting at the hours' ends: the missed run of 4 March, due at 02:00
		// and started at 04:00; the pending one of 10 March, due at 02:00.
		// The week starts on 3 March at 13:00.
		depth := charts["depth"]
		if depth.bars != 7*24 {
			t.Fatalf("week's depth: %d bars, want 168", depth.bars)
		}
		for i, want := range map[int]string{12: "0", 13: "1", 14: "1", 15: "0", 156: "0", 157: "1"} {
			if depth.totals[i] != want {
				t.Errorf("week's depth at bar %d = %s, want %s", i, depth.totals[i], want)
			}
		}
		if c := charts["latency"]; c.bars != 7*24 {
			t.Errorf("week's latency: %d bars, want 168", c.bars)
		}
		day := chartsOf(t, mustGet(t, srv, "/charts"))
		if c := day["runs"]; c.bars != 24 || c.sum() != 0 {
			t.Errorf("day's runs: %d bars, %d jobs; want 24 bars, none", c.bars, c.sum())
		}
		if status, body := get(t, srv, "/charts?range=year"); status != http.StatusBadRequest || !strings.Contains(body, "want day or week") {
			t.Errorf("GET /charts?range=year = %d, want 400 naming the ranges", status)
		}

		page := mustGet(t, srv, "/schedules/nightly")
		sc := chartsOf(t, page)
		// The ended instants of 4 to 7 March: the first waited two hours.
		if c := sc["durations"]; c.bars != 4 || c.totals[0] != "2h1m" {
			t.Errorf("nightly's durations: %d bars %v; want 4, the first 2h1m", c.bars, c.totals)
		}
		if !strings.Contains(page, `<line class="rule deadline"`) {
			t.Error("nightly's durations: no deadline rule")
		}
		if c := sc["runs-days"]; c.bars != 7 || c.sum() != 4 {
			t.Errorf("nightly's days: %d bars, %d jobs; want 7, 4", c.bars, c.sum())
		}
		if c := sc["runs-hours"]; c.bars != 24 {
			t.Errorf("nightly's hours: %d bars, want 24", c.bars)
		}
	})
}
