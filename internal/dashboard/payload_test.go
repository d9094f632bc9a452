package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// TestTriggerWithPayload: a schedule's page offers a trigger with a JSON
// payload, of every item or one; the payload is merged over the jobs'; a
// bad payload (not JSON, not an object, too deep) is refused with a
// message saying why and enqueues nothing; without the CSRF token the
// POST is forbidden.
func TestTriggerWithPayload(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		ctx := context.Background()
		clk := clock.NewFake(now)
		q := open(t, clk)
		seed(t, q)
		s := newSite(t, q, parseConfig(t), credentials(t, true), clk)
		b := s.browser(t)
		b.login(annLogin)

		_, page := b.get("/schedules/fan")
		form := between(t, page, `<section id="trigger">`, `</section>`)
		for _, want := range []string{`data-action="trigger-payload"`, `<textarea name="payload"`, `<option value="tenant=zeta">`, `name="csrf"`} {
			if !strings.Contains(form, want) {
				t.Errorf("fan's trigger form lacks %s:\n%s", want, form)
			}
		}
		csrf := b.csrf("/schedules/fan")
		jobs := func() []*queue.Job {
			t.Helper()
			js, err := q.List(ctx, queue.Filter{Schedule: "fan", State: queue.StatePending})
			if err != nil {
				t.Fatal(err)
			}
			return js
		}
		trigger := func(item, payload string) string {
			t.Helper()
			resp, body := b.post("/actions/trigger", url.Values{"csrf": {csrf}, "back": {"/schedules/fan"}, "schedule": {"fan"},
				"item": {item}, "payload": {payload}})
			if resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("POST /actions/trigger = %d:\n%s", resp.StatusCode, body)
			}
			_, page := b.get("/schedules/fan")
			return between(t, page, `<p id="flash"`, `</p>`)
		}
		deep := strings.Repeat(`{"a":`, queue.MaxPayloadDepth+1) + "1" + strings.Repeat("}", queue.MaxPayloadDepth+1)
		for payload, want := range map[string]string{`{"date": `: "not a JSON object", `[1, 2]`: "not a JSON object", `null`: "not a JSON object",
			deep: "nested too deep", `{"tenant": "other"}`: "tenant"} {
			if flash := trigger("", payload); !strings.Contains(flash, want) || !strings.Contains(flash, "payload") {
				t.Errorf("trigger with payload %.40q: flash %s, want it to say %q", payload, flash, want)
			}
		}
		if js := jobs(); len(js) != 0 {
			t.Fatalf("bad payloads enqueued %d jobs", len(js))
		}
		if flash := trigger("tenant=zeta", `{"date": "2026-03-01"}`); !strings.Contains(flash, "Triggered fan item tenant=zeta with the payload given") {
			t.Errorf("flash after a trigger with payload: %s", flash)
		}
		js := jobs()
		if len(js) != 1 || js[0].Item != "tenant=zeta" {
			t.Fatalf("trigger of zeta with a payload made %+v, want one job of zeta", js)
		}
		var p map[string]any
		if err := json.Unmarshal(js[0].Payload, &p); err != nil || p["date"] != "2026-03-01" || p["tenant"] != "zeta" {
			t.Errorf("payload %s, %v: want the date merged over the item's", js[0].Payload, err)
		}
		if resp, _ := b.post("/actions/trigger", url.Values{"schedule": {"fan"}, "payload": {`{"a": 1}`}}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST without the CSRF token = %d, want 403", resp.StatusCode)
		}
		if js := jobs(); len(js) != 1 {
			t.Errorf("%d pending jobs of fan after a forbidden trigger, want 1", len(js))
		}
	})
}
