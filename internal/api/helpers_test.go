package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

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

func openQueue(t testing.TB, dsn string, clk clock.Clock) *queue.Client {
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

// The tokens of the test config: one reads, one acts.
const (
	readToken = "read-token-0123456789abcdefghijklmnopqrstuv"
	actToken  = "act-token-0123456789abcdefghijklmnopqrstuvw"
)

var testConfig = `
[tasks.report]
command = ["true"]
redact = ["password"]

[[schedule]]
name = "nightly"
cron = "0 3 * * *"
timezone = "Europe/Paris"
task = "report"

[[schedule]]
name = "fan"
cron = "0 3 * * *"
timezone = "Europe/Paris"
task = "report"
for_each = [{ tenant = "acme" }, { tenant = "zeta" }]

[[api.token]]
name = "dashboards"
hash = "` + config.HashToken(readToken).String() + `"

[[api.token]]
name = "ci"
hash = "` + config.HashToken(actToken).String() + `"
access = "act"
`

func parseConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Parse("schedules.toml", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// at3 is 03:00 in Paris on day d of March 2026, in UTC.
func at3(d int) time.Time {
	paris, _ := time.LoadLocation("Europe/Paris")
	return time.Date(2026, 3, d, 3, 0, 0, 0, paris).UTC()
}

// fixture is what seed wrote.
type fixture struct {
	done, dead, pending, incident int64
}

// seed writes nightly's instants of 8, 9 and 10 March, done, dead and
// pending, and an open incident of the dead one.
func seed(t testing.TB, q *queue.Client) fixture {
	t.Helper()
	ctx := context.Background()
	var jobs []queue.NewJob
	for _, d := range []int{8, 9, 10} {
		jobs = append(jobs, queue.NewJob{Key: schedule.DedupKey("nightly", "", at3(d)), Type: "report", Schedule: "nightly",
			ScheduledAt: at3(d), RunAt: at3(d), MaxAttempts: 1, Payload: json.RawMessage(`{"password":"hunter2"}`)})
	}
	res, err := q.Advance(ctx, store.Advance{Schedule: "nightly", To: at3(10), Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{done: res[0].ID, dead: res[1].ID, pending: res[2].ID}
	for _, step := range []struct {
		id      int64
		outcome queue.Outcome
		err     string
	}{{f.done, queue.OutcomeDone, ""}, {f.dead, queue.OutcomeDead, "exit status 3: password hunter2 refused"}} {
		r, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{"report"}}})
		if err != nil || len(r.Claimed) != 1 || r.Claimed[0].ID != step.id {
			t.Fatalf("claim: %+v, %v; want job %d", r.Claimed, err, step.id)
		}
		res := store.Result{Job: r.Claimed[0], Worker: "node1-pool/w1", Outcome: step.outcome, Error: step.err,
			Output: "report written\n", Started: now, Finished: now.Add(time.Second)}
		if _, err := q.Engine().CommitPoolTx(ctx, store.PoolTx{Owner: "node1-pool", Now: now.Add(time.Second), Results: []store.Result{res}}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := q.CommitAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{
		{Schedule: "nightly", ScheduledAt: at3(9), Kind: store.AlarmDead, JobID: f.dead, At: now}}})
	if err != nil {
		t.Fatal(err)
	}
	f.incident = out.Occurrences[0].Incident.ID
	return f
}

// logBuffer collects the API's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// client calls a test server of the API and checks every response
// against openapi.json: its status, headers and body.
type client struct {
	t      *testing.T
	srv    *httptest.Server
	router routers.Router
	doc    *openapi3.T
	log    *logBuffer
}

// newClient serves the API over q with cfg and returns its client.
func newClient(t *testing.T, q *queue.Client, cfg *config.Config) *client {
	t.Helper()
	logs := &logBuffer{}
	a, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, HTTP: cfg.HTTP,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	doc := loadDocument(t)
	doc.Servers = openapi3.Servers{{URL: srv.URL + Prefix}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &client{t: t, srv: srv, router: router, doc: doc, log: logs}
}

// loadDocument loads and validates openapi.json.
func loadDocument(t testing.TB) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(Document)
	if err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("openapi.json is not a valid document: %v", err)
	}
	return doc
}

// response is an API response, checked against the document.
type response struct {
	status int
	header http.Header
	body   []byte
}

// problem decodes r's problem details.
func (r response) problem(t *testing.T) Problem {
	t.Helper()
	var p Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("problem: %v in %s", err, r.body)
	}
	return p
}

// decode decodes r's body into v.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode: %v in %s", err, r.body)
	}
}

// do sends method path with token ("" for none) and body ("" for none,
// sent as application/json), and checks the response against the document.
func (c *client) do(method, path, token, body string, headers ...string) response {
	c.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.srv.URL+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return c.send(req)
}

// send sends req and checks its response against the document.
func (c *client) send(req *http.Request) response {
	c.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	c.check(req, resp, b)
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

// check validates a response against the document. A path the document
// lacks must answer a problem.
func (c *client) check(req *http.Request, resp *http.Response, body []byte) {
	c.t.Helper()
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if ct := resp.Header.Get("Content-Type"); ct != problemContentType {
			c.t.Errorf("%s %s: no such route in openapi.json, and answered %d %s, not a problem", req.Method, req.URL.Path, resp.StatusCode, ct)
			return
		}
		schema := c.doc.Components.Schemas["Problem"].Value
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			c.t.Errorf("%s %s: %v", req.Method, req.URL.Path, err)
		} else if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			c.t.Errorf("%s %s: the problem does not match the document: %v\n%s", req.Method, req.URL.Path, err, body)
		}
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		c.t.Errorf("%s %s answered %d, not as openapi.json says: %v\n%s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}
