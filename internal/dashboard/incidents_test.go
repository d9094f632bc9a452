package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestAlarmsPageIncidents: /alarms lists the incidents, open first, with
// their count, silence and who acknowledged them; an open incident not
// acknowledged has an Acknowledge form, whose POST (with the session's
// CSRF token) records the user and stops it being offered; without the
// token, or with actions off, the POST changes nothing.
func TestAlarmsPageIncidents(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		ctx := context.Background()
		clk := clock.NewFake(now)
		q := open(t, clk)
		at := now.Add(-time.Hour)
		out, err := q.CommitAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{
			{Schedule: "nightly", ScheduledAt: at, Kind: store.AlarmDead, JobID: 1, At: at},
			{Schedule: "nightly", ScheduledAt: at.Add(time.Minute), Kind: store.AlarmDead, JobID: 2, At: at.Add(time.Minute)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatInt(out.Occurrences[0].Incident.ID, 10)
		if err := q.Silence(ctx, "nightly", q.Clock().Now().Add(2*time.Hour), "bob"); err != nil {
			t.Fatal(err)
		}
		cfg := parseConfig(t)
		ro := newSite(t, q, cfg, credentials(t, false), clk).browser(t)
		ro.login(annLogin)
		_, page := ro.get("/alarms")
		row := between(t, page, `<tr data-incident-id="`+id+`" class="open">`, `</tr>`)
		for _, want := range []string{">open<", ">dead<", `<td data-label="Count" class="count">2</td>`, "nightly"} {
			if !strings.Contains(row, want) {
				t.Errorf("incident row lacks %s:\n%s", want, row)
			}
		}
		if silenced := between(t, row, `class="silenced">`, `</td>`); !strings.Contains(silenced, "<time") {
			t.Errorf("incident row shows no silence: %s", silenced)
		}
		if strings.Contains(row, `data-action="ack"`) {
			t.Errorf("actions off, yet an Acknowledge form:\n%s", row)
		}
		if resp, _ := ro.post("/actions/ack", url.Values{"csrf": {ro.csrf("/alarms")}, "incident": {id}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("actions off: POST /actions/ack = %d, want 403", resp.StatusCode)
		}

		s := newSite(t, q, cfg, credentials(t, true), clk)
		b := s.browser(t)
		b.login(annLogin)
		_, page = b.get("/alarms")
		row = between(t, page, `<tr data-incident-id="`+id+`" class="open">`, `</tr>`)
		if !strings.Contains(row, `data-action="ack"`) || !strings.Contains(row, `name="incident" value="`+id+`"`) {
			t.Fatalf("no Acknowledge form in:\n%s", row)
		}
		if resp, _ := b.post("/actions/ack", url.Values{"incident": {id}, "back": {"/alarms"}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST /actions/ack without CSRF = %d, want 403", resp.StatusCode)
		}
		if in, err := q.Incident(ctx, out.Occurrences[0].Incident.ID); err != nil || in.AckedBy != "" {
			t.Fatalf("a refused acknowledgement recorded %+v, %v", in, err)
		}
		resp, _ := b.post("/actions/ack", url.Values{"csrf": {b.csrf("/alarms")}, "incident": {id}, "back": {"/alarms"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("POST /actions/ack = %d, want 303", resp.StatusCode)
		}
		_, page = b.get("/alarms")
		if flash := between(t, page, `<p id="flash"`, `</p>`); !strings.Contains(flash, "Incident "+id+" (nightly dead) acknowledged") {
			t.Errorf("flash = %s", flash)
		}
		row = between(t, page, `<tr data-incident-id="`+id+`" class="open">`, `</tr>`)
		if strings.Contains(row, `data-action="ack"`) || !strings.Contains(row, "ann (dashboard, from 127.0.0.1)") {
			t.Errorf("acknowledged incident row:\n%s", row)
		}
		if !strings.Contains(s.logs.String(), `msg="dashboard action" component=dashboard action=ack who=ann remote_addr=127.0.0.1 incident=`+id) {
			t.Errorf("no log line of the acknowledgement in:\n%s", s.logs.String())
		}
	})
}
