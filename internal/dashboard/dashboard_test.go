package dashboard

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestSchedulesPageShowsTheDatabase: / shows each schedule with its
// expression in words, zone, next runs, state and deadline state, and a
// strip whose cells are the instants the database holds, oldest first,
// with the outcome of each: missed, done, retried, dead, skipped, running,
// pending.
func TestSchedulesPageShowsTheDatabase(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		srv := newServer(t, q, parseConfig(t), clk)
		body := mustGet(t, srv, "/")
		for _, want := range []string{`<table id="schedules">`, `<title>Schedules · scheduler</title>`, `<nav>`,
			`href="/jobs"`, `href="/alarms"`, `<script src="/static/refresh.js" defer></script>`} {
			if !strings.Contains(body, want) {
				t.Errorf("/ lacks %s", want)
			}
		}
		if strings.Contains(body, "<script>") || strings.Contains(body, " onclick=") || strings.Contains(body, " style=") {
			t.Error("/ has an inline script, handler or style, which the CSP refuses")
		}
		row := between(t, body, `<tr data-schedule="nightly"`, `</tr>`)
		if got := text(between(t, row, `<td class="expr"`, `</td>`)); !strings.Contains(got, "at 03:00, every day") || !strings.Contains(got, "Europe/Paris") {
			t.Errorf("td.expr = %q, want the expression in words and the zone", got)
		}
		next := text(between(t, row, `<td class="next"`, `</td>`))
		if !strings.Contains(next, "2026-03-11 03:00:00 +01:00") || !strings.Contains(next, "in 14 h") {
			t.Errorf("td.next = %q, want the next run in Paris with its offset, in 14 h", next)
		}
		if got := text(between(t, row, `<td class="state"`, `</td>`)); got != "active" {
			t.Errorf("td.state = %q, want active", got)
		}
		if got := text(between(t, row, `<td class="deadline"`, `</td>`)); got != "missed" {
			t.Errorf("td.deadline = %q, want missed (an open missed alarm)", got)
		}
		cells := cellsOf(row)
		if len(cells) != len(nightly) {
			t.Fatalf("nightly's strip has %d cells, want %d: %+v", len(cells), len(nightly), cells)
		}
		ids := map[string]int64{outcomeMissed: f.missed, outcomeDone: f.done, outcomeRetried: f.retried, outcomeDead: f.dead,
			outcomeRunning: f.running, outcomePending: f.pending}
		for i, n := range nightly {
			c := cells[i]
			want := at3(n.day).In(paris).Format(time.RFC3339)
			if c.instant != want || c.outcome != n.outcome {
				t.Errorf("cell %d = %s %s, want %s %s", i, c.instant, c.outcome, want, n.outcome)
			}
			if id, ok := ids[n.outcome]; ok && c.href != fmt.Sprintf("/runs/%d", id) {
				t.Errorf("cell %d (%s) links to %s, want /runs/%d", i, n.outcome, c.href, id)
			}
		}
		if c := cells[4]; !strings.Contains(c.title, "skipped (overlap)") || !strings.HasPrefix(c.href, "/run?") {
			t.Errorf("skipped cell = %+v, want its reason and a link to the instant's run", c)
		}
		if c := cells[3]; !strings.Contains(c.title, "no such table: sales") {
			t.Errorf("dead cell's title = %q, want the last error", c.title)
		}
		if c := cells[2]; !strings.Contains(c.title, "after 2 attempts") {
			t.Errorf("retried cell's title = %q, want its attempts", c.title)
		}
		fan := cellsOf(between(t, body, `<tr data-schedule="fan"`, `</tr>`))
		if len(fan) != 1 || fan[0].outcome != outcomeDead || fan[0].href != fmt.Sprintf("/runs/%d", f.fanDead) {
			t.Errorf("fan's strip = %+v, want one dead cell linking to zeta's job %d", fan, f.fanDead)
		}

		if err := q.SetPaused(context.Background(), "nightly", true); err != nil {
			t.Fatal(err)
		}
		row = between(t, mustGet(t, srv, "/"), `<tr data-schedule="nightly"`, `</tr>`)
		if got := text(between(t, row, `<td class="state"`, `</td>`)); got != "paused" {
			t.Errorf("td.state of a paused schedule = %q", got)
		}
	})
}

// TestSchedulePageStripsPerItem: a schedule's page shows a strip per
// fan-out item, or the one asked for with ?item=, its recent runs and
// alarms; an unknown schedule or item is 404.
func TestSchedulePageStripsPerItem(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		srv := newServer(t, q, parseConfig(t), clk)
		body := mustGet(t, srv, "/schedules/fan")
		for item, want := range map[string]string{"tenant=acme": outcomeDone, "tenant=zeta": outcomeDead} {
			cells := cellsOf(between(t, body, `<div class="strip" data-item="`+item+`">`, `</div>`))
			if len(cells) != 1 || cells[0].outcome != want {
				t.Errorf("strip of %s = %+v, want one %s cell", item, cells, want)
			}
		}
		one := mustGet(t, srv, "/schedules/fan?item=tenant%3Dzeta")
		if strings.Contains(one, `data-item="tenant=acme"`) || !strings.Contains(one, `data-item="tenant=zeta"`) {
			t.Error("?item=tenant=zeta shows other items' strips, or not its own")
		}
		if !strings.Contains(one, fmt.Sprintf(`data-job-id="%d"`, f.fanDead)) {
			t.Errorf("zeta's page lacks its run %d", f.fanDead)
		}
		nightlyPage := mustGet(t, srv, "/schedules/nightly")
		if !strings.Contains(nightlyPage, fmt.Sprintf(`data-alarm-id="%d"`, f.alarmID)) || !strings.Contains(nightlyPage, "overlap") {
			t.Error("nightly's page lacks its alarm or its skip")
		}
		for _, path := range []string{"/schedules/nope", "/schedules/fan?item=tenant%3Dnope", "/runs/999999", "/runs/x", "/nowhere"} {
			if status, _ := get(t, srv, path); status != http.StatusNotFound {
				t.Errorf("GET %s = %d, want 404", path, status)
			}
		}
	})
}

// TestRunPage: a run's page lists its attempts with worker, start, end,
// outcome, error and output; a running job names its lease holder; a
// pending one says why it does not run; /run finds a job by its instant
// and shows a skipped instant's reason.
func TestRunPage(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		srv := newServer(t, q, parseConfig(t), clk)

		retried := mustGet(t, srv, fmt.Sprintf("/runs/%d", f.retried))
		attempts := regexp.MustCompile(`<tr class="attempt" data-outcome="([a-z_]+)">`).FindAllStringSubmatch(retried, -1)
		if len(attempts) != 2 || attempts[0][1] != "retry" || attempts[1][1] != "done" {
			t.Errorf("retried job's attempts = %v, want retry then done", attempts)
		}
		for _, want := range []string{"node1-pool/w3", "exit status 1: disk full", "report written", "1m30s",
			"2026-03-06 03:00:00 +01:00", `data-field="state"`, `data-field="schedule"`, `data-field="item"`} {
			if !strings.Contains(html.UnescapeString(retried), want) {
				t.Errorf("retried job's page lacks %q", want)
			}
		}
		if got := text(between(t, retried, `data-field="state">`, `</dd>`)); got != "done" {
			t.Errorf("state = %q, want done", got)
		}

		running := mustGet(t, srv, fmt.Sprintf("/runs/%d", f.running))
		if lease := text(between(t, running, `<p id="lease">`, `</p>`)); !strings.Contains(lease, "node1-pool") {
			t.Errorf("#lease = %q, want the owner", lease)
		}
		pending := mustGet(t, srv, fmt.Sprintf("/runs/%d", f.pending))
		why := text(between(t, pending, `<section id="why">`, `</section>`))
		if !strings.Contains(why, "concurrency limit: 1 job of task report running") || !strings.Contains(why, "no daemon is running") {
			t.Errorf("#why = %q, want the concurrency limit and no daemon", why)
		}
		if strings.Contains(running, `id="why"`) {
			t.Error("a running job's page says why it is not running")
		}

		status, loc := get(t, srv, "/run?schedule=nightly&instant="+url.QueryEscape(at3(7).In(paris).Format(time.RFC3339)))
		if status != http.StatusSeeOther || loc != fmt.Sprintf("/runs/%d", f.dead) {
			t.Errorf("/run of the dead instant = %d %s, want 303 to /runs/%d", status, loc, f.dead)
		}
		skipped := mustGet(t, srv, "/run?schedule=nightly&instant="+at3(8).Format(time.RFC3339))
		if got := text(between(t, skipped, `data-field="state">`, `</dd>`)); got != "skipped" || !strings.Contains(skipped, "overlap") {
			t.Errorf("skipped instant: state %q, want skipped with its reason", got)
		}
		if status, _ := get(t, srv, "/run?schedule=nightly&instant="+at3(1).Format(time.RFC3339)); status != http.StatusNotFound {
			t.Errorf("/run of an instant without a job or skip = %d, want 404", status)
		}
	})
}

// TestJobsPagedNewestFirst: /jobs lists JobsPage jobs newest first, a#older
// leads to the next page below the lowest id shown and is absent on the
// last; filters narrow; a dead job shows its last error.
func TestJobsPagedNewestFirst(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		ctx := context.Background()
		var batch []queue.NewJob
		for i := range 2*JobsPage + 5 {
			batch = append(batch, queue.NewJob{Type: "bulk", Key: fmt.Sprintf("bulk|%03d", i)})
		}
		if _, err := q.EnqueueBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range st.Total {
			total += n
		}
		srv := newServer(t, q, parseConfig(t), clk)
		idRE := regexp.MustCompile(`<tr data-job-id="(\d+)">`)
		olderRE := regexp.MustCompile(`<a id="older" href="([^"]+)">`)
		var seen []string
		path := "/jobs"
		for pages := 0; path != ""; pages++ {
			if pages > 10 {
				t.Fatal("paging does not end")
			}
			body := mustGet(t, srv, path)
			ids := idRE.FindAllStringSubmatch(body, -1)
			if len(ids) > JobsPage {
				t.Fatalf("%s lists %d jobs, more than %d", path, len(ids), JobsPage)
			}
			for _, m := range ids {
				seen = append(seen, m[1])
			}
			path = ""
			if m := olderRE.FindStringSubmatch(body); m != nil {
				path = html.UnescapeString(m[1])
			}
		}
		if len(seen) != total {
			t.Fatalf("paging showed %d jobs, want all %d", len(seen), total)
		}
		for i := 1; i < len(seen); i++ {
			var a, b int
			fmt.Sscan(seen[i-1], &a)
			fmt.Sscan(seen[i], &b)
			if a <= b {
				t.Fatalf("job %d listed before %d: want newest first", a, b)
			}
		}
		dead := mustGet(t, srv, "/jobs?state=dead&schedule=nightly")
		ids := idRE.FindAllStringSubmatch(dead, -1)
		if len(ids) != 1 || ids[0][1] != fmt.Sprint(f.dead) {
			t.Fatalf("dead jobs of nightly = %v, want job %d", ids, f.dead)
		}
		if got := text(between(t, dead, `<td data-label="Last error" class="error">`, `</td>`)); !strings.Contains(got, "no such table: sales") {
			t.Errorf("dead job's td.error = %q", got)
		}
		if !strings.Contains(dead, `<form id="filter" method="get" action="/jobs">`) || strings.Contains(dead, `id="older"`) {
			t.Error("filtered page lacks the filter form or offers older jobs")
		}
		keyed := idRE.FindAllStringSubmatch(mustGet(t, srv, "/jobs?key=bulk%7C00"), -1)
		if len(keyed) != 10 {
			t.Errorf("key prefix bulk|00: %d jobs, want 10", len(keyed))
		}
		if status, _ := get(t, srv, "/jobs?state=lost"); status != http.StatusBadRequest {
			t.Errorf("unknown state: %d, want 400", status)
		}
	})
}

// TestAlarmsPage: /alarms lists each alarm with kind, schedule, instant,
// open or closed, and its notification jobs.
func TestAlarmsPage(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		f := seed(t, q)
		srv := newServer(t, q, parseConfig(t), clk)
		body := mustGet(t, srv, "/alarms")
		row := between(t, body, fmt.Sprintf(`<tr data-alarm-id="%d">`, f.alarmID), `</tr>`)
		for cls, want := range map[string]string{"kind": "missed", "schedule": "nightly", "open": "open",
			"instant": "2026-03-04 03:00:00 +01:00"} {
			if got := text(between(t, row, `class="`+cls+`"`, `</td>`)); !strings.Contains(got, want) {
				t.Errorf("alarm's td.%s = %q, want %q", cls, got, want)
			}
		}
		notified := text(between(t, row, `class="notifications"`, `</td>`))
		if !strings.Contains(notified, "pager #") || !strings.Contains(notified, "pending") {
			t.Errorf("notifications = %q, want the pager job, pending", notified)
		}
	})
}

// TestStaticAndMethods: the stylesheet and script are served, with the
// same headers; a POST to a page is refused.
func TestStaticAndMethods(t *testing.T) {
	clk := clock.NewFake(now)
	q := openQueue(t, t.TempDir()+"/q.db", clk)
	srv := newServer(t, q, parseConfig(t), clk)
	for _, path := range []string{"/static/style.css", "/static/refresh.js", "/static/icon.svg"} {
		if status, body := get(t, srv, path); status != http.StatusOK || len(body) == 0 {
			t.Errorf("GET %s = %d, %d bytes", path, status, len(body))
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST / = %d, want 405 or 404", resp.StatusCode)
	}
	body := mustGet(t, srv, "/")
	if !strings.Contains(body, "The configuration has no schedule") && !strings.Contains(body, `<table id="schedules">`) {
		t.Error("an empty queue's / shows neither schedules nor their absence")
	}
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// text is the text of an HTML fragment, its spaces collapsed.
func text(fragment string) string {
	if i := strings.Index(fragment, ">"); i >= 0 && !strings.HasPrefix(fragment, "<") {
		fragment = fragment[i+1:] // the rest of the opening tag
	}
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(fragment, " "))), " ")
}

// TestWhyNotRunning: a pending job's page says why it waits: its run_at
// ahead, its retry backoff, a task that no running daemon handles, a
// version of its payload that none accepts, its paused schedule, or a free
// worker; and a running job's lease names the daemon's host.
func TestWhyNotRunning(t *testing.T) {
	engines(t, func(t *testing.T, open func(*testing.T, clock.Clock) *queue.Client) {
		clk := clock.NewFake(now)
		q := open(t, clk)
		ctx := context.Background()
		// A daemon on node1 runs report jobs only. Its row is written at
		// the store's time, which Handlers judges it by: on PostgreSQL the
		// server's.
		if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: q.Clock().Now(), Presence: &store.Presence{Types: []string{"report", "retried"},
			Process: queue.Process{PID: 42, Host: "node1", Version: "test"}, First: true}}); err != nil {
			t.Fatal(err)
		}
		enqueue := func(j queue.NewJob) int64 {
			t.Helper()
			e, err := q.Enqueue(ctx, j)
			if err != nil {
				t.Fatal(err)
			}
			return e.ID
		}
		later := enqueue(queue.NewJob{Type: "report", RunAt: now.Add(3 * time.Hour)})
		// Times from the fake clock: on PostgreSQL the store's own clock
		// follows the server's.
		unhandled := enqueue(queue.NewJob{Type: "pager", RunAt: now})
		newer := enqueue(queue.NewJob{Type: "report", Version: 2, RunAt: now})
		ready := enqueue(queue.NewJob{Type: "report", Schedule: "nightly", ScheduledAt: at3(10), Key: "ready", RunAt: now})
		retried := enqueue(queue.NewJob{Type: "retried", MaxAttempts: 3, RunAt: now})
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now, Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"retried"}}})
		if err != nil || len(r.Claimed) != 1 {
			t.Fatalf("claim: %+v, %v", r, err)
		}
		res := store.Result{Job: r.Claimed[0], Worker: "node1-pool/w0", Outcome: queue.OutcomeRetry, Error: "503 from upstream",
			Started: now, Finished: now, RetryAt: now.Add(10 * time.Minute)}
		if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now, Results: []store.Result{res}}); err != nil {
			t.Fatal(err)
		}
		srv := newServer(t, q, parseConfig(t), clk)
		why := func(id int64) string {
			t.Helper()
			return text(between(t, mustGet(t, srv, fmt.Sprintf("/runs/%d", id)), `<section id="why">`, `</section>`))
		}
		for id, want := range map[int64]string{
			later:     "run_at in the future: it runs at 2026-03-10 15:00:00 +00:00 (in 3 h)",
			unhandled: "waiting for a handler: no running daemon has a handler for task pager",
			newer:     "waiting for a worker that accepts version 2 of task report: the running daemons accept version 1",
			ready:     "ready: it waits for a free worker",
			retried:   "retry backoff: attempt 2 of 3 runs at 2026-03-10 12:10:00 +00:00 (in 10 min); the last one failed: 503 from upstream",
		} {
			if got := why(id); !strings.Contains(got, want) {
				t.Errorf("job %d: #why = %q, want %q", id, got, want)
			}
		}
		if err := q.SetPaused(ctx, "nightly", true); err != nil {
			t.Fatal(err)
		}
		if got := why(ready); strings.Contains(got, "version") {
			t.Errorf("job of version 1: #why = %q, want no word of a version", got)
		}
		if v := text(between(t, mustGet(t, srv, fmt.Sprintf("/runs/%d", newer)), `<dd data-field="version">`, `</dd>`)); v != "2" {
			t.Errorf("the page of a job of version 2 shows version %q", v)
		}
		if got := why(ready); !strings.Contains(got, "schedule nightly is paused") || !strings.Contains(got, "ready: it waits for a free worker") {
			t.Errorf("job of a paused schedule: #why = %q", got)
		}
		r, err = q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now, Claim: &store.Claim{Lease: time.Minute, N: 1, Types: []string{"pager"}}})
		if err != nil || len(r.Claimed) != 1 {
			t.Fatalf("claim: %+v, %v", r, err)
		}
		lease := text(between(t, mustGet(t, srv, fmt.Sprintf("/runs/%d", unhandled)), `<p id="lease">`, `</p>`))
		if !strings.Contains(lease, "node1-pool (pid 42 on node1)") || !strings.Contains(lease, "2026-03-10 12:01:00 +00:00") {
			t.Errorf("#lease = %q, want the owner, its host and the lease's end", lease)
		}
	})
}

// TestSessionShowsWhoAndFlash: the page header names who is logged in and
// shows the flash of the last action, as Config.SessionFunc tells; without
// a SessionFunc neither appears.
func TestSessionShowsWhoAndFlash(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	q := openQueue(t, t.TempDir()+"/q.db", clk)
	cfg := parseConfig(t)
	h, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, Clock: clk,
		SessionFunc: func(*http.Request) Session { return Session{Who: "alice", Flash: "nightly paused"} }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, path := range []string{"/", "/jobs", "/alarms", "/schedules/nightly", "/runs/1"} {
		_, body := get(t, srv, path)
		if !strings.Contains(body, `<span id="who">alice</span>`) || !strings.Contains(body, `<p id="flash" role="status">nightly paused</p>`) {
			t.Errorf("%s lacks #who or #flash", path)
		}
	}
	if body := mustGet(t, newServer(t, q, cfg, clk), "/"); strings.Contains(body, `id="who"`) || strings.Contains(body, `id="flash"`) {
		t.Error("without a session, / shows #who or #flash")
	}
}
