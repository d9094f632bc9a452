package dashboard

import (
	"context"
	"fmt"
	"html"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// manySchedules are the names of the schedules of manyConfig beside
// nightly and fan, in the shuffled order of the file.
var manySchedules = func() []string {
	var names []string
	for i := range 123 {
		names = append(names, fmt.Sprintf("cust-%03d", i))
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	return names
}()

// manyConfig is the test's configuration with the schedules manySchedules
// after its own: more than two pages, in a file order that is not the
// order of their names.
func manyConfig(t testing.TB) *config.Config {
	t.Helper()
	var conf strings.Builder
	conf.WriteString(testConfig)
	for _, name := range manySchedules {
		fmt.Fprintf(&conf, "[[schedule]]\nname = %q\ncron = \"*/5 * * * *\"\ntask = \"report\"\n", name)
	}
	cfg, err := config.Parse("schedules.toml", []byte(conf.String()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var (
	rowNameRE = regexp.MustCompile(`<tr data-schedule="([^"]*)"`)
	nextRE    = regexp.MustCompile(`<a id="next" href="([^"]*)"`)
	prevRE    = regexp.MustCompile(`<a id="prev" href="([^"]*)"`)
	totalRE   = regexp.MustCompile(`<p id="total" class="sub" data-total="(\d+)">`)
)

// schedulesOn returns the schedules a page of / lists, in order, and its
// a#next and a#prev links ("" when it has none). The pages run by name;
// within a page those in trouble come first, so names are sorted here.
func schedulesOn(t *testing.T, body string) (names []string, next, prev string) {
	t.Helper()
	for _, m := range rowNameRE.FindAllStringSubmatch(body, -1) {
		names = append(names, html.UnescapeString(m[1]))
	}
	slices.Sort(names)
	if m := nextRE.FindStringSubmatch(body); m != nil {
		next = html.UnescapeString(m[1])
	}
	if m := prevRE.FindStringSubmatch(body); m != nil {
		prev = html.UnescapeString(m[1])
	}
	return names, next, prev
}

// walk follows the links link picks from path on, and returns the pages'
// schedules in the order walked; it fails on a page of more than
// SchedulesPage rows or a total other than total.
func walk(t *testing.T, get func(string) string, path string, total int, link func(next, prev string) string) [][]string {
	t.Helper()
	var pages [][]string
	for path != "" {
		if len(pages) > 1000 {
			t.Fatalf("walked 1000 pages from %s; the links loop", path)
		}
		body := get(path)
		names, next, prev := schedulesOn(t, body)
		if len(names) > SchedulesPage {
			t.Errorf("GET %s lists %d schedules, want at most %d", path, len(names), SchedulesPage)
		}
		if m := totalRE.FindStringSubmatch(body); m == nil || m[1] != fmt.Sprint(total) {
			t.Errorf("GET %s: total %v, want %d", path, m, total)
		}
		pages = append(pages, names)
		path = link(next, prev)
	}
	return pages
}

// TestSchedulesPaged: / lists the schedules by name, SchedulesPage at a
// time; a#next walks every schedule exactly once in order, a#prev walks
// the same pages back, and each page says how many schedules there are.
func TestSchedulesPaged(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		seed(t, q)
		srv := newServer(t, q, manyConfig(t), clk)
		get := func(path string) string { return mustGet(t, srv, path) }
		want := append([]string{"fan", "nightly"}, manySchedules...)
		slices.Sort(want)

		forward := walk(t, get, "/", len(want), func(next, _ string) string { return next })
		if len(forward) != 3 {
			t.Errorf("%d schedules on %d pages, want 3", len(want), len(forward))
		}
		for i, p := range forward[:len(forward)-1] {
			if len(p) != SchedulesPage {
				t.Errorf("page %d holds %d schedules, want %d (only the last may hold fewer)", i+1, len(p), SchedulesPage)
			}
		}
		if got := slices.Concat(forward...); !slices.Equal(got, want) {
			t.Fatalf("the pages list\n%v\nwant each schedule once, by name:\n%v", got, want)
		}
		// From the last page back to the first by a#prev.
		lastPath := "/?after=" + forward[len(forward)-2][SchedulesPage-1]
		backward := walk(t, get, lastPath, len(want), func(_, prev string) string { return prev })
		slices.Reverse(backward)
		if !slices.EqualFunc(backward, forward, slices.Equal) {
			t.Errorf("a#prev walks the pages\n%v\nwant the pages of a#next\n%v", backward, forward)
		}
		if _, next, prev := schedulesOn(t, get("/")); prev != "" || next == "" {
			t.Errorf("the first page links prev %q, next %q; want no prev, a next", prev, next)
		}

		// A key that is no schedule's name pages from where it would be.
		if names, _, _ := schedulesOn(t, get("/?after=cust-0505")); len(names) == 0 || names[0] != "cust-051" {
			t.Errorf("/?after=cust-0505 starts at %v, want cust-051", names)
		}
		if names, next, prev := schedulesOn(t, get("/?after=zzz")); len(names) != 0 || next != "" || prev != "/" {
			t.Errorf("past the last: %v, next %q, prev %q; want none, no next, prev to the first page", names, next, prev)
		}
	})
}

// TestSchedulesFilter: the form#filter of / keeps the schedules whose name
// holds q, the paused or active ones, those with an open alarm (not one
// whose alarms are closed), and pages through them keeping the filter.
func TestSchedulesFilter(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q) // nightly has an open missed alarm
		// fan had a dead alarm, closed by its recovery.
		ctx := context.Background()
		dead, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{{Schedule: "fan", Item: "tenant=zeta",
			ScheduledAt: at3(9), Kind: store.AlarmDead, JobID: f.fanDead}}})
		if err != nil || len(dead) != 1 {
			t.Fatalf("raise: %+v, %v", dead, err)
		}
		if _, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{{Schedule: "fan", Item: "tenant=zeta",
			ScheduledAt: at3(9), Kind: store.AlarmRecovered, JobID: f.fanDead, Resolves: []int64{dead[0].ID}}}}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"cust-007", "cust-070", "fan"} {
			if err := q.SetPaused(ctx, name, true); err != nil {
				t.Fatal(err)
			}
		}
		srv := newServer(t, q, manyConfig(t), clk)
		page := func(path string) string { return mustGet(t, srv, path) }
		body := page("/")
		for _, want := range []string{`<form id="filter" method="get" action="/">`, `<input name="q"`} {
			if !strings.Contains(body, want) {
				t.Errorf("/ lacks %s", want)
			}
		}
		all := append([]string{"fan", "nightly"}, manySchedules...)
		slices.Sort(all)
		matching := func(keep func(string) bool) []string {
			var out []string
			for _, n := range all {
				if keep(n) {
					out = append(out, n)
				}
			}
			return out
		}
		for _, c := range []struct {
			path string
			want []string
		}{
			{"/?q=07", matching(func(n string) bool { return strings.Contains(n, "07") })},
			{"/?q=0", matching(func(n string) bool { return strings.Contains(n, "0") })}, // 112: three pages
			{"/?q=ght", []string{"nightly"}},
			{"/?q=nothing", nil},
			{"/?state=paused", []string{"cust-007", "cust-070", "fan"}},
			{"/?state=paused&q=07", []string{"cust-007", "cust-070"}},
			{"/?state=active&q=07", matching(func(n string) bool { return strings.Contains(n, "07") && n != "cust-007" && n != "cust-070" })},
			{"/?alarm=open", []string{"nightly"}},
		} {
			pages := walk(t, page, c.path, len(c.want), func(next, _ string) string { return next })
			if got := slices.Concat(pages...); !slices.Equal(got, c.want) {
				t.Errorf("GET %s and its next pages list\n%v\nwant\n%v", c.path, got, c.want)
			}
		}
		if body := page("/?q=nothing"); !strings.Contains(body, "No schedule matches.") || !strings.Contains(body, `value="nothing"`) {
			t.Error("/?q=nothing does not say that no schedule matches, or forgets the filter in its form")
		}
		for _, path := range []string{"/?state=sleepy", "/?alarm=closed"} {
			if status, _ := get(t, srv, path); status != http.StatusBadRequest {
				t.Errorf("GET %s = %d, want 400", path, status)
			}
		}
	})
}
