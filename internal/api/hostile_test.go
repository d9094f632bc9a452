package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

// TestAuth: no token, a wrong one or another scheme is 401 with a
// challenge; a read token on an action is 403; cookies count for nothing;
// a Host this server does not answer to is 421.
func TestAuth(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		q := open(t, clock.NewFake(now))
		seed(t, q)
		c := newClient(t, q, parseConfig(t))
		tests := []struct {
			name, method, path, auth string
			status                   int
			code, challenge          string
		}{
			{"no token", "GET", "/api/v1/status", "", 401, codeUnauthorized, `Bearer realm="scheduler"`},
			{"wrong token", "GET", "/api/v1/status", "Bearer " + readToken + "x", 401, codeUnauthorized, `Bearer realm="scheduler", error="invalid_token"`},
			{"basic", "GET", "/api/v1/status", "Basic " + readToken, 401, codeUnauthorized, `Bearer realm="scheduler"`},
			{"empty bearer", "GET", "/api/v1/jobs", "Bearer ", 401, codeUnauthorized, `Bearer realm="scheduler"`},
			{"read token acts", "POST", "/api/v1/schedules/nightly/pause", "Bearer " + readToken, 403, codeForbidden, ""},
			{"read token cancels", "POST", "/api/v1/jobs/3/cancel", "Bearer " + readToken, 403, codeForbidden, ""},
			{"no token acts", "POST", "/api/v1/jobs/3/cancel", "", 401, codeUnauthorized, `Bearer realm="scheduler"`},
			{"lower-case scheme", "GET", "/api/v1/status", "bearer " + readToken, 200, "", ""},
		}
		for _, tt := range tests {
			req, _ := http.NewRequest(tt.method, c.srv.URL+tt.path, nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			// A browser's session cookie is no credential here.
			req.AddCookie(&http.Cookie{Name: "scheduler_session", Value: "a-valid-looking-session"})
			r := c.send(req)
			if r.status != tt.status {
				t.Errorf("%s: %s %s = %d %s, want %d", tt.name, tt.method, tt.path, r.status, r.body, tt.status)
				continue
			}
			if tt.code != "" && r.problem(t).Code != tt.code {
				t.Errorf("%s: code %q, want %q", tt.name, r.problem(t).Code, tt.code)
			}
			if got := r.header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("%s: WWW-Authenticate %q, want %q", tt.name, got, tt.challenge)
			}
			if r.header.Get("Set-Cookie") != "" {
				t.Errorf("%s: a cookie set: %s", tt.name, r.header.Get("Set-Cookie"))
			}
		}
		if cur, _ := q.Cursors(t.Context()); cur["nightly"].Paused {
			t.Error("a read token paused nightly")
		}
		if j, _ := q.Job(t.Context(), 3); j.State != queue.StatePending {
			t.Errorf("a read token cancelled job 3: %s", j.State)
		}
		req, _ := http.NewRequest("GET", c.srv.URL+"/api/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+readToken)
		req.Host = "attacker.example"
		if r := c.send(req); r.status != http.StatusMisdirectedRequest || r.problem(t).Code != codeMisdirected {
			t.Errorf("Host attacker.example = %d %s, want 421", r.status, r.body)
		}
		if r := c.do("GET", "/api/v1/nothing", readToken, ""); r.status != http.StatusNotFound || r.problem(t).Code != codeNotFound {
			t.Errorf("GET /api/v1/nothing = %d %s, want 404", r.status, r.body)
		}
		if r := c.do("DELETE", "/api/v1/jobs/3", actToken, ""); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET" {
			t.Errorf("DELETE /api/v1/jobs/3 = %d %s, want 405 with Allow: GET", r.status, r.body)
		}
	})
}

// TestHostileInput: bad input is a 4xx that names what is wrong, and
// changes nothing.
func TestHostileInput(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T, clk clock.Clock) *queue.Client) {
		q := open(t, clock.NewFake(now))
		seed(t, q)
		c := newClient(t, q, parseConfig(t))
		before, err := q.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
		deepPayload := `{"payload":` + strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth) + `}`
		huge := `{"payload":{"a":"` + strings.Repeat("x", MaxBody) + `"}}`
		tests := []struct {
			name, method, path, body string
			header                   []string
			status                   int
			code, detail             string
		}{
			{"oversized body", "POST", "/api/v1/schedules/nightly/trigger", huge, nil, 413, codeBodyTooLarge, "larger than"},
			{"deep JSON", "POST", "/api/v1/schedules/nightly/trigger", deep, nil, 400, codeJSONTooDeep, "nests 34 deep"},
			{"deep payload", "POST", "/api/v1/schedules/nightly/trigger", deepPayload, nil, 400, codeJSONTooDeep, "at most 33"},
			{"unknown field", "POST", "/api/v1/schedules/nightly/trigger", `{"itme":"acme"}`, nil, 400, codeUnknownField, `unknown field "itme"`},
			{"unknown field on pause", "POST", "/api/v1/schedules/nightly/pause", `{"force":true}`, nil, 400, codeUnknownField, `"force"`},
			{"two values", "POST", "/api/v1/schedules/nightly/trigger", `{} {}`, nil, 400, codeInvalidJSON, "more than one"},
			{"not JSON", "POST", "/api/v1/schedules/nightly/trigger", `item=acme`, nil, 400, codeInvalidJSON, "not a JSON object"},
			{"wrong type", "POST", "/api/v1/schedules/nightly/resume", `{"skip_missed":"yes"}`, nil, 400, codeInvalidJSON, `"skip_missed"`},
			{"form body", "POST", "/api/v1/schedules/nightly/trigger", `{}`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, codeMediaType, "application/json"},
			{"payload not an object", "POST", "/api/v1/schedules/nightly/trigger", `{"payload":[1]}`, nil, 400, codeInvalidPayload, "not a JSON object"},
			{"unknown item", "POST", "/api/v1/schedules/fan/trigger", `{"item":"nobody"}`, nil, 400, codeUnknownItem, "have: tenant=acme; tenant=zeta"},
			{"payload sets the item", "POST", "/api/v1/schedules/fan/trigger", `{"payload":{"tenant":"x"}}`, nil, 400, codeInvalidPayload, "for_each key"},
			{"key mismatch", "POST", "/api/v1/schedules/fan/trigger", `{"key":"a"}`, []string{"Idempotency-Key", "b"}, 400, codeIdempotencyKey, "differ"},
			{"unknown schedule", "POST", "/api/v1/schedules/nigthly/trigger", ``, nil, 404, codeUnknownSchedule, `did you mean "nightly"?`},
			{"unknown schedule read", "GET", "/api/v1/schedules/weekly/next", ``, nil, 404, codeUnknownSchedule, "have: nightly, fan"},
			{"bad id", "GET", "/api/v1/jobs/abc", ``, nil, 400, codeInvalidID, `"abc" is not a job id`},
			{"zero id", "POST", "/api/v1/jobs/0/retry", ``, nil, 400, codeInvalidID, `"0"`},
			{"negative id", "POST", "/api/v1/incidents/-1/ack", ``, nil, 400, codeInvalidID, `"-1" is not an incident id`},
			{"no job", "POST", "/api/v1/jobs/999999/cancel", ``, nil, 404, codeJobNotFound, "no job 999999"},
			{"bad limit", "GET", "/api/v1/jobs?limit=100000", ``, nil, 400, codeInvalidParameter, "limit"},
			{"bad state", "GET", "/api/v1/jobs?state=zombie", ``, nil, 400, codeInvalidParameter, `state "zombie"`},
			{"bad before_id", "GET", "/api/v1/jobs?before_id=x", ``, nil, 400, codeInvalidParameter, "before_id"},
			{"bad n", "GET", "/api/v1/schedules/nightly/next?n=0", ``, nil, 400, codeInvalidParameter, "n \"0\""},
			{"bad from", "GET", "/api/v1/schedules/nightly/next?from=tomorrow", ``, nil, 400, codeInvalidParameter, "RFC 3339"},
			{"backfill future", "POST", "/api/v1/schedules/nightly/backfill", `{"from":"2026-03-01T00:00:00Z","to":"2030-01-01T00:00:00Z"}`, nil, 400, codeBackfillRange, "in the future"},
			{"backfill reversed", "POST", "/api/v1/schedules/nightly/backfill", `{"from":"2026-03-05T00:00:00Z","to":"2026-03-01T00:00:00Z"}`, nil, 400, codeBackfillRange, "before from"},
			{"backfill no range", "POST", "/api/v1/schedules/nightly/backfill", ``, nil, 400, codeBackfillRange, "from \"\""},
			{"backfill too long", "POST", "/api/v1/schedules/nightly/backfill", `{"from":"1990-01-01T00:00:00Z","to":"2026-03-01T00:00:00Z"}`, nil, 400, codeBackfillRange, "more than"},
		}
		for _, tt := range tests {
			r := c.do(tt.method, tt.path, actToken, tt.body, tt.header...)
			if r.status != tt.status {
				t.Errorf("%s: %s %s = %d %.300s, want %d", tt.name, tt.method, tt.path, r.status, r.body, tt.status)
				continue
			}
			if p := r.problem(t); p.Code != tt.code || !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("%s: problem %s %q, want %s and %q", tt.name, p.Code, p.Detail, tt.code, tt.detail)
			}
		}
		after, err := q.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if after.Total[queue.StatePending] != before.Total[queue.StatePending] {
			t.Errorf("bad input enqueued jobs: %v pending, were %v", after.Total, before.Total)
		}
	})
}
