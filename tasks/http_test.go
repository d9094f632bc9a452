package tasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
)

func newTestHTTP(t *testing.T, cfg HTTPConfig) *HTTP {
	t.Helper()
	h, err := NewHTTP(cfg)
	if err != nil {
		t.Fatalf("NewHTTP(%+v): %v", cfg, err)
	}
	return h
}

func TestNewHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  HTTPConfig
		want string // in the error text
	}{
		{"no url", HTTPConfig{}, "scheme"},
		{"relative url", HTTPConfig{URL: "/hook"}, "scheme"},
		{"other scheme", HTTPConfig{URL: "ftp://example.com/x"}, "scheme"},
		{"no host", HTTPConfig{URL: "http:///x"}, "host"},
		{"unparsable url", HTTPConfig{URL: "http://[::1"}, "parse url"},
		{"password kept out of errors", HTTPConfig{URL: "ftp://u:secret@example.com/"}, "u:xxxxx@"},
		{"bad method", HTTPConfig{URL: "http://example.com/", Method: "PO ST"}, "method"},
		{"bad header name", HTTPConfig{URL: "http://example.com/", Headers: map[string]string{"X Y": "1"}}, `"X Y"`},
		{"empty header name", HTTPConfig{URL: "http://example.com/", Headers: map[string]string{"": "1"}}, "empty"},
		{"header value with newline", HTTPConfig{URL: "http://example.com/", Headers: map[string]string{"X-A": "1\r\nX-B: 2"}}, "CR, LF"},
		{"reserved header", HTTPConfig{URL: "http://example.com/", Headers: map[string]string{"x-scheduler-key": "1"}}, "reserved"},
		{"negative timeout", HTTPConfig{URL: "http://example.com/", Timeout: -time.Second}, "negative"},
		{"content length", HTTPConfig{URL: "http://example.com/", Headers: map[string]string{"Content-Length": "1"}}, "Content-Length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewHTTP(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewHTTP(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("NewHTTP error %q shows the password", err)
			}
		})
	}
}

// request is what a test server received.
type request struct {
	method, path, host string
	header             http.Header
	body               string
}

func TestHTTPRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		cfg        HTTPConfig
		payload    string
		wantMethod string
		wantBody   string
		wantHeader map[string]string
		wantHost   string
		traced     bool // the attempt has a span
	}{
		{
			name:       "defaults",
			payload:    `{"report":"daily"}`,
			wantMethod: "POST",
			wantBody:   `{"report":"daily"}`,
			wantHeader: map[string]string{
				"Content-Type":        "application/json",
				"X-Scheduler-Job-Id":  "7",
				"X-Scheduler-Key":     "key-7",
				"X-Scheduler-Attempt": "2",
				"Traceparent":         "",
			},
		},
		{
			name:       "traced attempt",
			payload:    `{}`,
			wantMethod: "POST",
			wantBody:   `{}`,
			traced:     true,
			wantHeader: map[string]string{"Traceparent": testTraceparent, "Tracestate": testTracestate},
		},
		{
			name:       "empty payload",
			wantMethod: "POST",
			wantBody:   `{}`,
		},
		{
			name: "method and headers",
			cfg: HTTPConfig{Method: "put", Headers: map[string]string{
				"authorization": "Bearer t0ken",
				"Content-Type":  "application/json; charset=utf-8",
				"Host":          "hooks.example",
			}},
			payload:    `{}`,
			wantMethod: "PUT",
			wantBody:   `{}`,
			wantHeader: map[string]string{
				"Authorization":      "Bearer t0ken",
				"Content-Type":       "application/json; charset=utf-8",
				"X-Scheduler-Job-Id": "7",
			},
			wantHost: "hooks.example",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := make(chan request, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- request{r.Method, r.URL.Path, r.Host, r.Header.Clone(), string(b)}
				io.WriteString(w, "accepted")
			}))
			defer srv.Close()
			cfg := tt.cfg
			cfg.URL = srv.URL + "/hooks/report"
			h := newTestHTTP(t, cfg)
			job := &queue.Job{ID: 7, Key: "key-7", Type: "report", Attempt: 2, Payload: []byte(tt.payload)}
			ctx := t.Context()
			if tt.traced {
				ctx = tracedContext(t, ctx)
			}
			out, err := h.do(ctx, job)
			if err != nil {
				t.Fatalf("do: %v", err)
			}
			if want := "HTTP/1.1 200 OK\naccepted"; string(out) != want {
				t.Errorf("output = %q, want %q", out, want)
			}
			r := waitFor(t, got)
			if r.method != tt.wantMethod || r.path != "/hooks/report" || r.body != tt.wantBody {
				t.Errorf("got %s %s %q, want %s /hooks/report %q", r.method, r.path, r.body, tt.wantMethod, tt.wantBody)
			}
			for k, want := range tt.wantHeader {
				if got := r.header.Get(k); got != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if tt.wantHost != "" && r.host != tt.wantHost {
				t.Errorf("Host = %q, want %q", r.host, tt.wantHost)
			}
		})
	}
}

func TestHTTPStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		retryAfter string
		want       string        // fate
		wantAfter  time.Duration // for fateRetryAfter
	}{
		{"200", 200, "", fateDone, 0},
		{"204", 204, "", fateDone, 0},
		{"400", 400, "", fatePermanent, 0},
		{"404", 404, "", fatePermanent, 0},
		{"408", 408, "", fateRetry, 0},
		{"429 seconds", 429, "120", fateRetryAfter, 2 * time.Minute},
		{"429 date", 429, now.Add(90 * time.Second).Format(http.TimeFormat), fateRetryAfter, 90 * time.Second},
		{"429 date in the past", 429, now.Add(-time.Hour).Format(http.TimeFormat), fateRetryAfter, 0},
		{"429 without retry-after", 429, "", fateRetry, 0},
		{"429 garbage retry-after", 429, "soon", fateRetry, 0},
		{"503 seconds", 503, "7", fateRetryAfter, 7 * time.Second},
		{"503 without retry-after", 503, "", fateRetry, 0},
		{"500", 500, "", fateRetry, 0},
		{"500 ignores retry-after", 500, "60", fateRetry, 0},
		{"502", 502, "", fateRetry, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.retryAfter != "" {
					w.Header().Set("Retry-After", tt.retryAfter)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, "the body")
			}))
			defer srv.Close()
			h := newTestHTTP(t, HTTPConfig{URL: srv.URL, Clock: clock.NewFake(now)})
			out, err := h.do(t.Context(), &queue.Job{ID: 1, Payload: []byte(`{}`)})
			if got := fateOf(err); got != tt.want {
				t.Fatalf("do = %v (%s), want %s", err, got, tt.want)
			}
			var retry *queue.RetryError
			if errors.As(err, &retry) && retry.After != tt.wantAfter {
				t.Errorf("retry after %s, want %s", retry.After, tt.wantAfter)
			}
			status := fmt.Sprintf("%d %s", tt.status, http.StatusText(tt.status))
			if wantOut := "HTTP/1.1 " + status + "\n"; !strings.HasPrefix(string(out), wantOut) {
				t.Errorf("output = %q, want it to start with %q", out, wantOut)
			}
			if tt.status != 204 && !strings.HasSuffix(string(out), "the body") {
				t.Errorf("output = %q, want the body", out)
			}
			if err != nil && (!strings.Contains(err.Error(), "status "+status) || !strings.Contains(err.Error(), "the body")) {
				t.Errorf("error %q does not name the status and body", err)
			}
		})
	}
}

func TestHTTPOutputIsCapped(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("a", httpOutput) + strings.Repeat("b", 100<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, body)
	}))
	defer srv.Close()
	h := newTestHTTP(t, HTTPConfig{URL: srv.URL})
	out, err := h.do(t.Context(), &queue.Job{ID: 1})
	if fateOf(err) != fateRetry {
		t.Fatalf("do = %v, want a retryable error", err)
	}
	if want := "HTTP/1.1 500 Internal Server Error\n" + body[:httpOutput]; string(out) != want {
		t.Errorf("output is %d bytes, want the status line and the first %d bytes of the body", len(out), httpOutput)
	}
	if max := errorOutput + 200; len(err.Error()) > max {
		t.Errorf("error is %d bytes, want at most %d", len(err.Error()), max)
	}
}

func TestHTTPConnectionRefused(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	h := newTestHTTP(t, HTTPConfig{URL: "http://" + addr + "/hook"})
	job := &queue.Job{ID: 1}
	out, err := h.do(t.Context(), job)
	if got := fateOf(err); got != fateRetry {
		t.Errorf("do = %v (%s), want %s", err, got, fateRetry)
	}
	if len(out) != 0 {
		t.Errorf("output = %q, want none", out)
	}
	if err := h.Work(t.Context(), job); fateOf(err) != fateRetry {
		t.Errorf("Work = %v, want a retryable error", err)
	}
}

func TestHTTPContextDone(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	h := newTestHTTP(t, HTTPConfig{URL: srv.URL})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.Work(ctx, &queue.Job{ID: 1}) }()
	waitFor(t, arrived)
	cancel()
	err := waitFor(t, done)
	if got := fateOf(err); got != fateRetry || !errors.Is(err, context.Canceled) {
		t.Errorf("Work = %v (%s), want a retryable context.Canceled", err, got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{"30", 30 * time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"86400", 24 * time.Hour, true},
		{"86401", maxRetryAfter, true},
		{"99999999999999999999999", maxRetryAfter, true},
		{"-5", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"Wed, 01 May 2024 12:01:00 GMT", time.Minute, true},
		{"Wednesday, 01-May-24 12:00:30 GMT", 30 * time.Second, true},
		{"Wed May  1 12:00:10 2024", 10 * time.Second, true},
		{"Wed, 01 May 2024 11:00:00 GMT", 0, true},
		{"Wed, 01 May 2025 12:00:00 GMT", maxRetryAfter, true},
	}
	for _, tt := range tests {
		got, ok := parseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("parseRetryAfter(%q) = %s, %v, want %s, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// recorder is a test server that records the requests it gets.
type recorder struct {
	*httptest.Server
	got chan request
}

func newRecorder(t *testing.T, tls bool) *recorder {
	t.Helper()
	r := &recorder{got: make(chan request, 20)}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.got <- request{req.Method, req.URL.Path, req.Host, req.Header.Clone(), string(b)}
		io.WriteString(w, "reached "+req.URL.Path)
	})
	if tls {
		r.Server = httptest.NewTLSServer(h)
	} else {
		r.Server = httptest.NewServer(h)
	}
	t.Cleanup(r.Close)
	return r
}

// received returns the requests r got so far.
func (r *recorder) received() []request {
	var rs []request
	for {
		select {
		case req := <-r.got:
			rs = append(rs, req)
		default:
			return rs
		}
	}
}

func TestHTTPRedirects(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{"Authorization": "Bearer t0ken", "X-Api-Key": "k3y", "Host": "hooks.example"}
	tests := []struct {
		name      string
		method    string
		follow    bool
		status    int
		sameHost  bool // redirect to another path of the same server
		want      string
		wantErr   []string // in the error text
		wantAt    string   // path the payload reached, "" for none
		wantCreds bool     // the configured headers reached it
	}{
		{"off by default", "POST", false, http.StatusFound, false, fatePermanent,
			[]string{"status 302 Found", "location http://", "/elsewhere", "follow_redirects is off"}, "", false},
		{"off for 307 too", "POST", false, http.StatusTemporaryRedirect, true, fatePermanent,
			[]string{"status 307", "follow_redirects is off"}, "", false},
		{"307 to another origin keeps the payload, drops the headers", "POST", true, http.StatusTemporaryRedirect, false, fateDone,
			nil, "/elsewhere", false},
		{"308 to another origin keeps the payload, drops the headers", "PUT", true, http.StatusPermanentRedirect, false, fateDone,
			nil, "/elsewhere", false},
		{"307 on the same origin keeps the headers", "POST", true, http.StatusTemporaryRedirect, true, fateDone,
			nil, "/elsewhere", true},
		{"302 after POST is refused", "POST", true, http.StatusFound, false, fatePermanent,
			[]string{"status 302 Found", "would send GET without the payload instead of POST"}, "", false},
		{"301 after PUT is refused", "PUT", true, http.StatusMovedPermanently, true, fatePermanent,
			[]string{"status 301", "instead of PUT"}, "", false},
		{"303 after POST is refused", "POST", true, http.StatusSeeOther, true, fatePermanent,
			[]string{"status 303", "instead of POST"}, "", false},
		{"302 after GET is followed", "GET", true, http.StatusFound, false, fateDone,
			nil, "/elsewhere", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			target := newRecorder(t, false)
			var redirector *httptest.Server
			redirector = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					target.Config.Handler.ServeHTTP(w, r)
					return
				}
				to := target.URL + "/elsewhere"
				if tt.sameHost {
					to = "/elsewhere"
				}
				http.Redirect(w, r, to, tt.status)
			}))
			defer redirector.Close()
			h := newTestHTTP(t, HTTPConfig{URL: redirector.URL + "/hook", Method: tt.method, Headers: secrets, FollowRedirects: tt.follow})
			out, err := h.do(t.Context(), &queue.Job{ID: 3, Key: "key-3", Attempt: 1, Payload: []byte(`{"n":1}`)})
			if got := fateOf(err); got != tt.want {
				t.Fatalf("do = %v (%s), want %s", err, got, tt.want)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			got := target.received()
			if tt.wantAt == "" {
				if len(got) > 0 {
					t.Fatalf("the redirect was followed: %+v", got)
				}
				if status := fmt.Sprintf("HTTP/1.1 %d ", tt.status); !strings.HasPrefix(string(out), status) {
					t.Errorf("output = %q, want the %d response", out, tt.status)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("target got %d requests, want 1", len(got))
			}
			r := got[0]
			if want := "HTTP/1.1 200 OK\nreached /elsewhere"; string(out) != want {
				t.Errorf("output = %q, want %q", out, want)
			}
			wantBody := `{"n":1}`
			if tt.method == "GET" {
				wantBody = "" // a GET's body is not resent
			}
			if r.method != tt.method || r.path != tt.wantAt || r.body != wantBody {
				t.Errorf("target got %s %s %q, want %s %s %q", r.method, r.path, r.body, tt.method, tt.wantAt, wantBody)
			}
			if r.header.Get("X-Scheduler-Job-Id") != "3" || r.header.Get("X-Scheduler-Key") != "key-3" || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("target lost the job's headers: %v", r.header)
			}
			if ref := r.header.Get("Referer"); ref != "" {
				t.Errorf("Referer = %q, want none", ref)
			}
			creds := r.header.Get("Authorization") != "" || r.header.Get("X-Api-Key") != "" || r.host == "hooks.example"
			if creds != tt.wantCreds {
				t.Errorf("configured headers reached the target: %v (host %s), want %v", creds, r.host, tt.wantCreds)
			}
		})
	}
}

func TestHTTPRedirectDowngradeRefused(t *testing.T) {
	t.Parallel()
	plain := newRecorder(t, false)
	secure := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/plain", http.StatusTemporaryRedirect))
	defer secure.Close()
	h := newTestHTTP(t, HTTPConfig{URL: secure.URL, FollowRedirects: true, Client: secure.Client()})
	_, err := h.do(t.Context(), &queue.Job{ID: 1})
	if got := fateOf(err); got != fatePermanent || !strings.Contains(err.Error(), "downgrades https to http") {
		t.Fatalf("do = %v (%s), want a permanent error naming the downgrade", err, got)
	}
	if got := plain.received(); len(got) > 0 {
		t.Errorf("the payload went over http: %+v", got)
	}
}

func TestHTTPRedirectLoopStops(t *testing.T) {
	t.Parallel()
	var hops atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, fmt.Sprintf("/%d", hops.Add(1)), http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	h := newTestHTTP(t, HTTPConfig{URL: srv.URL, FollowRedirects: true})
	_, err := h.do(t.Context(), &queue.Job{ID: 1})
	if got := fateOf(err); got != fatePermanent || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Fatalf("do = %v (%s), want a permanent error after 10 redirects", err, got)
	}
	if n := hops.Load(); n != maxRedirects+1 {
		t.Errorf("server saw %d requests, want %d", n, maxRedirects+1)
	}
}

// stallingServer answers the way body says, then holds the request until
// the client goes away. It reports each request's arrival on arrived.
func stallingServer(t *testing.T, body func(w http.ResponseWriter)) (srv *httptest.Server, arrived <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 1)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the request to its end lets the server notice when the
		// client closes the connection.
		_, _ = io.ReadAll(r.Body)
		ch <- struct{}{}
		if body != nil {
			body(w)
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestHTTPTimeouts(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		cfg     HTTPConfig
		advance time.Duration // fake time after which the attempt ends
		want    string        // the error after the URL
	}{
		{"default timeout", HTTPConfig{}, DefaultHTTPTimeout, "timed out after 1m0s waiting for the response headers"},
		{"timeout", HTTPConfig{Timeout: 5 * time.Second}, 5 * time.Second, "timed out after 5s waiting for the response headers"},
		{"header timeout", HTTPConfig{HeaderTimeout: 10 * time.Second}, 10 * time.Second, "timed out after 10s waiting for the response headers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, arrived := stallingServer(t, nil)
			fake := clock.NewFake(t0)
			cfg := tt.cfg
			cfg.URL, cfg.Clock = srv.URL, fake
			h := newTestHTTP(t, cfg)
			done := make(chan error, 1)
			go func() { done <- h.Work(t.Context(), &queue.Job{ID: 1}) }()
			waitFor(t, arrived)
			fake.Advance(tt.advance - time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("Work returned %v before its timeout", err)
			default:
			}
			fake.Advance(time.Millisecond)
			err := waitFor(t, done)
			if got := fateOf(err); got != fateRetry || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Work = %v (%s), want a retryable context.DeadlineExceeded", err, got)
			}
			if want := "POST " + srv.URL + ": " + tt.want; err.Error() != want {
				t.Errorf("Work = %q, want %q", err, want)
			}
		})
	}
}

func TestHTTPTimeoutWhileReadingTheBody(t *testing.T) {
	t.Parallel()
	srv, arrived := stallingServer(t, func(w http.ResponseWriter) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
	})
	fake := clock.NewFake(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	headersIn := make(chan struct{}, 1)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		headersIn <- struct{}{}
		return resp, err
	})}
	h := newTestHTTP(t, HTTPConfig{URL: srv.URL, Clock: fake, Client: client})
	done := make(chan struct {
		out []byte
		err error
	}, 1)
	go func() {
		out, err := h.do(t.Context(), &queue.Job{ID: 1})
		done <- struct {
			out []byte
			err error
		}{out, err}
	}()
	waitFor(t, arrived)
	waitFor(t, headersIn)
	fake.Advance(DefaultHTTPTimeout)
	r := waitFor(t, done)
	if got := fateOf(r.err); got != fateRetry || !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("do = %v (%s), want a retryable context.DeadlineExceeded", r.err, got)
	}
	if want := "POST " + srv.URL + ": timed out after 1m0s reading the response body after status 200 OK"; r.err.Error() != want {
		t.Errorf("do = %q, want %q", r.err, want)
	}
	if want := "HTTP/1.1 200 OK\npartial"; string(r.out) != want {
		t.Errorf("output = %q, want %q", r.out, want)
	}
}

func TestHTTPTaskTimeoutIsNamed(t *testing.T) {
	t.Parallel()
	srv, arrived := stallingServer(t, nil)
	h := newTestHTTP(t, HTTPConfig{URL: srv.URL, Clock: clock.NewFake(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))})
	// The cause the pool gives a context that reached the task's timeout.
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- h.Work(ctx, &queue.Job{ID: 1}) }()
	waitFor(t, arrived)
	cancel(&queue.TimeoutError{Timeout: 3 * time.Second})
	err := waitFor(t, done)
	if got := fateOf(err); got != fateRetry || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Work = %v (%s), want a retryable context.DeadlineExceeded", err, got)
	}
	if want := "POST " + srv.URL + ": timed out after 3s waiting for the response headers"; err.Error() != want {
		t.Errorf("Work = %q, want %q", err, want)
	}
}

func TestHTTPEndlessBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 1<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return // the client closed the connection
			}
		}
	}))
	defer srv.Close()
	// A fake clock that nobody advances: only the size limit can end the
	// read.
	h := newTestHTTP(t, HTTPConfig{URL: srv.URL, Clock: clock.NewFake(time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))})
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = h.do(t.Context(), &queue.Job{ID: 1})
		done <- err
	}()
	if err := waitFor(t, done); err != nil {
		t.Fatalf("do = %v, want success", err)
	}
	if want := "HTTP/1.1 200 OK\n" + strings.Repeat("x", httpOutput); string(out) != want {
		t.Errorf("output is %d bytes, want the status line and the first %d bytes of the body", len(out), httpOutput)
	}
}

// TestHTTPURLSecretsMasked: the query values and the password of the
// task's URL show in no error and no output, whether net/http, the status
// check or a redirect names the URL or the response quotes them; the
// scheme, host, port, path and parameter names stay, so that the endpoint
// can be recognised.
func TestHTTPURLSecretsMasked(t *testing.T) {
	t.Parallel()
	const (
		key     = "s3cr3t+k/y" // written s3cr3t%2Bk%2Fy
		written = "s3cr3t%2Bk%2Fy"
		sig     = "SIGsecret99"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/next?sig="+sig, http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "bad key %s for %s {\"key\":%q}", r.URL.Query().Get("apikey"), r.URL.RequestURI(), r.URL.Query().Get("apikey"))
	}))
	t.Cleanup(srv.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	query := "?apikey=" + written + "&customer=acme-corp"
	tests := []struct {
		name string
		url  string
		want []string // in the error text
	}{
		{"status error quoting the key", srv.URL + "/v1/report" + query,
			[]string{srv.URL + "/v1/report?apikey=[redacted]&customer=[redacted]: status 500", "bad key [redacted] for /v1/report?apikey=[redacted]"}},
		{"connection refused", closed + "/v1/report" + query,
			[]string{`Post "` + closed + `/v1/report?apikey=[redacted]&customer=[redacted]": dial tcp`}},
		{"password", "http://ann:" + written + "@" + strings.TrimPrefix(closed, "http://") + "/v1/report",
			[]string{`Post "http://ann:xxxxx@` + strings.TrimPrefix(closed, "http://") + `/v1/report": dial tcp`}},
		{"redirect location", srv.URL + "/moved" + query,
			[]string{"location " + srv.URL + "/next?sig=[redacted]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newTestHTTP(t, HTTPConfig{URL: tt.url})
			job := &queue.Job{ID: 1, Payload: []byte(`{}`)}
			err := h.Work(t.Context(), job)
			if err == nil {
				t.Fatal("Work succeeded, want an error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			for _, s := range []string{key, written, "acme-corp", sig} {
				if strings.Contains(err.Error(), s) || strings.Contains(string(job.Output()), s) {
					t.Errorf("error %q or output %q shows %q", err, job.Output(), s)
				}
			}
		})
	}
	_, err = NewHTTP(HTTPConfig{URL: "ftp://example.com/x?apikey=" + written})
	if err == nil || strings.Contains(err.Error(), written) || !strings.Contains(err.Error(), "apikey=[redacted]") {
		t.Errorf("NewHTTP error %v: want the url with its query value masked", err)
	}
}
