package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestReads: every read answers as the document says, masked as the
// task's redact says, on both engines, with either token.
func TestReads(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		q := open(t, clock.NewFake(now))
		f := seed(t, q)
		c := newClient(t, q, parseConfig(t))
		for _, tok := range []string{readToken, actToken} {
			var st statusView
			c.do("GET", "/api/v1/status", tok, "").decode(t, &st)
			if st.Dead != 1 || st.Totals["pending"] != 1 || st.OpenIncidents != 1 || len(st.Schedules) != 2 {
				t.Errorf("status = %+v, want 1 dead, 1 pending, 1 open incident, 2 schedules", st)
			}
		}
		var ss struct{ Schedules []scheduleView }
		c.do("GET", "/api/v1/schedules", readToken, "").decode(t, &ss)
		if n := ss.Schedules[0]; n.Name != "nightly" || n.LastRun == nil || n.LastRun.JobID != f.pending || n.NextRun == nil {
			t.Errorf("schedules[0] = %+v, want nightly, last run job %d, a next run", n, f.pending)
		} else if strings.HasSuffix(t.Name(), "/sqlite") && *n.NextRun != "2026-03-11T03:00:00+01:00" {
			// PostgreSQL's clock is the server's.
			t.Errorf("next run of nightly = %s, want 2026-03-11T03:00:00+01:00", *n.NextRun)
		}
		if r := c.do("GET", "/api/v1/schedules/fan", readToken, ""); r.status != http.StatusOK {
			t.Errorf("GET /schedules/fan = %d", r.status)
		}
		var next struct{ Runs []nextView }
		c.do("GET", "/api/v1/schedules/nightly/next?n=3&from=2026-03-29T00:00:00Z", readToken, "").decode(t, &next)
		if len(next.Runs) != 3 || *next.Runs[0].At != "2026-03-29T03:00:00+02:00" {
			t.Errorf("next = %+v, want 3 runs from 2026-03-29T03:00:00+02:00", next.Runs)
		}
		var jobs struct {
			Jobs         []jobView
			NextBeforeID *int64 `json:"next_before_id"`
		}
		c.do("GET", "/api/v1/jobs?state=dead&schedule=nightly", readToken, "").decode(t, &jobs)
		if len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != f.dead || jobs.NextBeforeID != nil {
			t.Errorf("dead jobs = %+v, want job %d alone", jobs, f.dead)
		}
		c.do("GET", "/api/v1/jobs?limit=2", readToken, "").decode(t, &jobs)
		if len(jobs.Jobs) != 2 || jobs.NextBeforeID == nil {
			t.Fatalf("jobs?limit=2 = %+v, want 2 and a next page", jobs)
		}
		c.do("GET", fmt.Sprintf("/api/v1/jobs?limit=2&before_id=%d", *jobs.NextBeforeID), readToken, "").decode(t, &jobs)
		if len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != f.done {
			t.Errorf("the second page = %+v, want job %d", jobs.Jobs, f.done)
		}
		r := c.do("GET", fmt.Sprintf("/api/v1/jobs/%d", f.dead), readToken, "")
		var j jobView
		r.decode(t, &j)
		if len(j.Attempts) != 1 || j.Attempts[0].Outcome != "dead" || strings.Contains(string(r.body), "hunter2") {
			t.Errorf("job %d = %s, want one dead attempt and the password masked", f.dead, r.body)
		}
		var als struct{ Alarms []alarmView }
		c.do("GET", "/api/v1/alarms?schedule=nightly", readToken, "").decode(t, &als)
		if len(als.Alarms) != 1 || als.Alarms[0].Kind != "dead" {
			t.Errorf("alarms = %+v, want the dead alarm", als)
		}
		var ins struct{ Incidents []incidentView }
		c.do("GET", "/api/v1/incidents", readToken, "").decode(t, &ins)
		if len(ins.Incidents) != 1 || ins.Incidents[0].ID != f.incident || !ins.Incidents[0].Open {
			t.Errorf("incidents = %+v, want incident %d open", ins, f.incident)
		}
		if r := c.do("GET", "/api/v1/openapi.json", "", ""); r.status != http.StatusOK || string(r.body) != string(Document) {
			t.Errorf("GET /openapi.json = %d, want the document", r.status)
		}
	})
}

// TestActions: every action with an act token, its effect, and its log
// line naming the token.
func TestActions(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		q := open(t, clock.NewFake(now))
		f := seed(t, q)
		c := newClient(t, q, parseConfig(t))
		ctx := t.Context()

		var tr struct{ Jobs []enqueuedView }
		r := c.do("POST", "/api/v1/schedules/fan/trigger", actToken, `{"item":"zeta","payload":{"full":true},"key":"deploy-42"}`)
		r.decode(t, &tr)
		if r.status != http.StatusCreated || len(tr.Jobs) != 1 || !tr.Jobs[0].Inserted || tr.Jobs[0].ID == nil {
			t.Fatalf("trigger = %d %s, want 201 and one job", r.status, r.body)
		}
		first := *tr.Jobs[0].ID
		r = c.do("POST", "/api/v1/schedules/fan/trigger", actToken, `{"item":"zeta"}`, "Idempotency-Key", "deploy-42")
		r.decode(t, &tr)
		if r.status != http.StatusOK || len(tr.Jobs) != 1 || tr.Jobs[0].Inserted || *tr.Jobs[0].ID != first {
			t.Errorf("trigger again with the key = %d %s, want 200 and job %d", r.status, r.body, first)
		}
		if j, err := q.Job(ctx, first); err != nil || j.Item != "tenant=zeta" || !strings.Contains(string(j.Payload), `"full":true`) {
			t.Errorf("triggered job = %+v, %v: want zeta's with the payload merged", j, err)
		}
		if !strings.Contains(c.log.String(), `msg="api action" component=api action=trigger who=ci`) {
			t.Errorf("no log line of the trigger by ci:\n%s", c.log.String())
		}

		var p struct {
			WasPaused bool `json:"was_paused"`
		}
		c.do("POST", "/api/v1/schedules/nightly/pause", actToken, "").decode(t, &p)
		if cur, _ := q.Cursors(ctx); !cur["nightly"].Paused || p.WasPaused {
			t.Errorf("pause: cursor %+v, answer %+v; want paused now", cur["nightly"], p)
		}
		c.do("POST", "/api/v1/schedules/nightly/resume", actToken, `{"skip_missed":true}`).decode(t, &p)
		if cur, _ := q.Cursors(ctx); cur["nightly"].Paused || !p.WasPaused {
			t.Errorf("resume: cursor %+v, answer %+v; want resumed", cur["nightly"], p)
		}

		var bf struct{ Enqueued, Existed int }
		c.do("POST", "/api/v1/schedules/nightly/backfill", actToken, `{"from":"2026-03-07T00:00:00+01:00","to":"2026-03-09T23:59:59+01:00"}`).decode(t, &bf)
		if bf.Enqueued != 1 || bf.Existed != 2 {
			t.Errorf("backfill = %+v, want 1 enqueued (7 March) and 2 existing", bf)
		}

		var js jobStateView
		c.do("POST", fmt.Sprintf("/api/v1/jobs/%d/retry", f.dead), actToken, "").decode(t, &js)
		if j, _ := q.Job(ctx, f.dead); j.State != queue.StatePending || js.Was != "dead" {
			t.Errorf("retry: job %s, answer %+v; want pending", j.State, js)
		}
		c.do("POST", fmt.Sprintf("/api/v1/jobs/%d/cancel", f.pending), actToken, "").decode(t, &js)
		if j, _ := q.Job(ctx, f.pending); j.State != queue.StateCancelled || js.State != "cancelled" {
			t.Errorf("cancel: job %s, answer %+v; want cancelled", j.State, js)
		}
		if r := c.do("POST", fmt.Sprintf("/api/v1/jobs/%d/discard", f.done), actToken, ""); r.status != http.StatusConflict || r.problem(t).Code != codeJobState {
			t.Errorf("discard of a done job = %d %s, want 409 job_state", r.status, r.body)
		}
		if r := c.do("POST", fmt.Sprintf("/api/v1/jobs/%d/retry", f.done), actToken, ""); r.status != http.StatusConflict {
			t.Errorf("retry of a done job = %d %s, want 409", r.status, r.body)
		}

		var ack struct {
			Acknowledged bool
			Incident     incidentView
		}
		c.do("POST", fmt.Sprintf("/api/v1/incidents/%d/ack", f.incident), actToken, "").decode(t, &ack)
		if !ack.Acknowledged || ack.Incident.AckedBy == nil || !strings.HasPrefix(*ack.Incident.AckedBy, "ci (api, from ") {
			t.Errorf("ack = %+v, want acknowledged by ci", ack)
		}
		c.do("POST", fmt.Sprintf("/api/v1/incidents/%d/ack", f.incident), actToken, "").decode(t, &ack)
		if ack.Acknowledged {
			t.Errorf("second ack = %+v, want acknowledged false", ack)
		}
		if r := c.do("POST", "/api/v1/incidents/999999/ack", actToken, ""); r.status != http.StatusNotFound || r.problem(t).Code != codeIncidentNotFound {
			t.Errorf("ack of no incident = %d %s, want 404", r.status, r.body)
		}
	})
}

// TestDiscard: a dead job is discarded, with the token's name on record.
func TestDiscard(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		q := open(t, clock.NewFake(now))
		f := seed(t, q)
		c := newClient(t, q, parseConfig(t))
		r := c.do("POST", fmt.Sprintf("/api/v1/jobs/%d/discard", f.dead), actToken, "")
		j, err := q.Job(t.Context(), f.dead)
		if r.status != http.StatusOK || err != nil || j.State != queue.StateDiscarded || !strings.HasPrefix(j.DiscardedBy, "ci (api, from ") {
			t.Errorf("discard = %d %s; job %+v, %v: want discarded by ci", r.status, r.body, j, err)
		}
		if !strings.Contains(c.log.String(), `msg="api action" component=api action=discard who=ci`) {
			t.Errorf("no log line of the discard by ci:\n%s", c.log.String())
		}
	})
}

// TestSchedulesAfter: the list of schedules holds a schedule with after,
// configured, with its upstream in place of a cron expression.
func TestSchedulesAfter(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		q := open(t, clock.NewFake(now))
		cfg, err := config.Parse("schedules.toml", []byte(testConfig+`
[[schedule]]
name = "summary"
after = "fan"
task = "report"
`))
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(t, q, cfg)
		var ss struct{ Schedules []scheduleView }
		c.do("GET", "/api/v1/schedules", readToken, "").decode(t, &ss)
		if len(ss.Schedules) != 3 {
			t.Fatalf("schedules = %+v, want 3", ss.Schedules)
		}
		if s := ss.Schedules[2]; s.Name != "summary" || !s.Configured || s.After == nil || *s.After != "fan" || s.Cron != nil || s.NextRun != nil || s.Waiting != nil {
			t.Errorf("schedules[2] = %+v, want summary, configured, after fan, no cron, not waiting", s)
		}
		var one scheduleView
		c.do("GET", "/api/v1/schedules/summary", readToken, "").decode(t, &one)
		if one.Name != "summary" || one.After == nil || *one.After != "fan" {
			t.Errorf("GET /schedules/summary = %+v, want summary after fan", one)
		}
	})
}
