package dashboard

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/postgres/pgtest"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// engines runs fn against a SQLite file and, when SCHEDULER_TEST_POSTGRES
// is set, a PostgreSQL schema.
func engines(t *testing.T, fn func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, func(t *testing.T, clk clock.Clock) *queue.Client {
			return openQueue(t, filepath.Join(t.TempDir(), "q.db"), clk)
		})
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, func(t *testing.T, clk clock.Clock) *queue.Client {
			return openQueue(t, pgtest.DSN(t), clk)
		})
	})
}

func openQueue(t *testing.T, dsn string, clk clock.Clock) *queue.Client {
	t.Helper()
	q, err := engine.Open(context.Background(), dsn, engine.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// now is the fake clock's time in the tests: noon UTC on 10 March 2026.
var now = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// paris is the zone of the test's schedules.
var paris = mustZone("Europe/Paris")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

const testConfig = `
[tasks.report]
command = ["true"]
concurrency = 1

[tasks.pager]
command = ["true"]

[[schedule]]
name = "nightly"
cron = "0 3 * * *"
timezone = "Europe/Paris"
task = "report"
deadline = "1h"
notify = ["pager"]

[[schedule]]
name = "fan"
cron = "0 3 * * *"
timezone = "Europe/Paris"
task = "report"
for_each = [{ tenant = "acme" }, { tenant = "zeta" }]
`

func parseConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Parse("schedules.toml", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// at3 is 03:00 in Paris on day d of March 2026.
func at3(d int) time.Time { return time.Date(2026, 3, d, 3, 0, 0, 0, paris).UTC() }

// fixture is what seed wrote: the ids of the jobs by what happened to them.
type fixture struct {
	missed, done, retried, dead, running, pending int64
	fanDead                                       int64
	alarmID                                       int64
}

// The instants of nightly, oldest first, and the outcome the strip shows
// for each.
var nightly = []struct {
	day     int
	outcome string
}{
	{4, outcomeMissed}, {5, outcomeDone}, {6, outcomeRetried}, {7, outcomeDead}, {8, outcomeSkipped},
	{9, outcomeRunning}, {10, outcomePending},
}

// seed fills q as a daemon would have: nightly's instants of 4 to 10 March
// (done after its deadline with a missed alarm and its notification, done,
// retried then done, dead, skipped as an overlap, running, pending), and
// fan's instant of 9 March, done for acme and dead for zeta.
func seed(t testing.TB, q *queue.Client) fixture {
	t.Helper()
	ctx := context.Background()
	var jobs []queue.NewJob
	var skips []store.Skip
	for _, n := range nightly {
		at := at3(n.day)
		if n.outcome == outcomeSkipped {
			skips = append(skips, store.Skip{Schedule: "nightly", ScheduledAt: at, Reason: store.SkipOverlap, RecordedAt: at})
			continue
		}
		jobs = append(jobs, queue.NewJob{Key: schedule.DedupKey("nightly", "", at), Type: "report", Schedule: "nightly",
			ScheduledAt: at, RunAt: at, MaxAttempts: 3})
	}
	res, err := q.Advance(ctx, store.Advance{Schedule: "nightly", To: at3(10), Jobs: jobs, Skips: skips})
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	ids := []*int64{&f.missed, &f.done, &f.retried, &f.dead, &f.running, &f.pending}
	for i, r := range res {
		*ids[i] = r.ID
	}
	var fan []queue.NewJob
	for _, tenant := range []string{"acme", "zeta"} {
		item := "tenant=" + tenant
		fan = append(fan, queue.NewJob{Key: schedule.DedupKey("fan", item, at3(9)), Type: "fan", Schedule: "fan", Item: item,
			ScheduledAt: at3(9), RunAt: at3(9), MaxAttempts: 1})
	}
	fres, err := q.Advance(ctx, store.Advance{Schedule: "fan", To: at3(9), Jobs: fan})
	if err != nil {
		t.Fatal(err)
	}
	f.fanDead = fres[1].ID

	// Claimed in run_at order, one at a time, as a pool would.
	step := func(when time.Time, want int64, outcome queue.Outcome, errText string, retryAt time.Time) {
		t.Helper()
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: when, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"report", "fan"}}})
		if err != nil || len(r.Claimed) != 1 || r.Claimed[0].ID != want {
			t.Fatalf("claim at %s: %+v, %v; want job %d", when, r.Claimed, err, want)
		}
		if outcome == "" {
			return // left running
		}
		res := store.Result{Job: r.Claimed[0], Worker: "node1-pool/w3", Outcome: outcome, Error: errText,
			Output: "report written\n", Started: when, Finished: when.Add(90 * time.Second), RetryAt: retryAt}
		if r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: when.Add(90 * time.Second), Results: []store.Result{res}}); err != nil || !r.Fenced[0] {
			t.Fatalf("result of job %d: %+v, %v", want, r, err)
		}
	}
	step(at3(4).Add(2*time.Hour), f.missed, queue.OutcomeDone, "", time.Time{})
	step(at3(5), f.done, queue.OutcomeDone, "", time.Time{})
	step(at3(6), f.retried, queue.OutcomeRetry, "exit status 1: disk full", at3(6).Add(time.Minute))
	step(at3(6).Add(time.Minute), f.retried, queue.OutcomeDone, "", time.Time{})
	step(at3(7), f.dead, queue.OutcomeDead, "exit status 3: no such table: sales", time.Time{})
	step(at3(9), f.running, "", "", time.Time{})
	fanID := fres[0].ID
	step(at3(9).Add(time.Second), fanID, queue.OutcomeDone, "", time.Time{})
	step(at3(9).Add(2*time.Second), f.fanDead, queue.OutcomeDead, "zeta: timeout", time.Time{})

	key := store.AlarmKey("nightly", "", at3(4), f.missed, store.AlarmMissed)
	raised, err := q.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{{Schedule: "nightly", ScheduledAt: at3(4),
		Kind: store.AlarmMissed, JobID: f.missed, Detail: json.RawMessage(`{"kind":"missed"}`),
		Notify: []queue.NewJob{{Key: store.NotifyKey(key, "pager"), Type: "pager"}}}}})
	if err != nil || len(raised) != 1 {
		t.Fatalf("raise: %+v, %v", raised, err)
	}
	f.alarmID = raised[0].ID
	return f
}

// newServer returns a test server of the dashboard over q at now.
func newServer(t testing.TB, q *queue.Client, cfg *config.Config, clk clock.Clock) *httptest.Server {
	t.Helper()
	h, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, Clock: clk,
		DeadlineFunc: func(string) (time.Time, bool) { return at3(10).Add(time.Hour), true }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// noRedirect is a client that returns redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get fetches path and returns the status and the body; it checks the
// headers every page carries.
func get(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := noRedirect.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Content-Security-Policy"); got != contentSecurityPolicy {
		t.Errorf("GET %s: Content-Security-Policy %q", path, got)
	}
	if resp.StatusCode == http.StatusSeeOther {
		return resp.StatusCode, resp.Header.Get("Location")
	}
	return resp.StatusCode, string(b)
}

// mustGet fetches path, which must answer 200.
func mustGet(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	status, body := get(t, srv, path)
	if status != http.StatusOK {
		t.Fatalf("GET %s = %d:\n%s", path, status, body)
	}
	return body
}

// between returns the text of body from the first from on, up to the
// first to after it.
func between(t *testing.T, body, from, to string) string {
	t.Helper()
	i := strings.Index(body, from)
	if i < 0 {
		t.Fatalf("no %q in the page:\n%s", from, body)
	}
	rest := body[i:]
	if j := strings.Index(rest[len(from):], to); j >= 0 {
		return rest[:len(from)+j]
	}
	return rest
}

var cellRE = regexp.MustCompile(`<a class="cell [a-z]+( manual)?" href="([^"]*)" data-instant="([^"]*)" data-outcome="([a-z]+)"(?: data-manual="1")? title="([^"]*)"`)

// cells are a strip's cells: instant, outcome, title and link.
type cellSeen struct {
	href, instant, outcome, title string
	manual                        bool
}

func cellsOf(page string) []cellSeen {
	var out []cellSeen
	for _, m := range cellRE.FindAllStringSubmatch(page, -1) {
		u := html.UnescapeString
		out = append(out, cellSeen{manual: m[1] != "", href: u(m[2]), instant: u(m[3]), outcome: m[4], title: u(m[5])})
	}
	return out
}
