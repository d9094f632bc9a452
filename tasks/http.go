package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/redact"
	"github.com/scheduler-run/scheduler/queue"
)

// Headers that describe the job on every request; Headers cannot set them.
const (
	headerPrefix  = "X-Scheduler-"
	headerJobID   = "X-Scheduler-Job-Id"
	headerKey     = "X-Scheduler-Key"
	headerAttempt = "X-Scheduler-Attempt"
)

const (
	// httpOutput is how much of a body is read, as the job's output. The
	// connection is closed on the rest, so an endless body costs nothing.
	httpOutput = 4 << 10
	// maxRetryAfter caps a server's Retry-After, which is untrusted.
	maxRetryAfter = 24 * time.Hour
	// maxRedirects is net/http's default.
	maxRedirects = 10
)

// DefaultHTTPTimeout bounds an attempt with no Timeout and no deadline.
const DefaultHTTPTimeout = time.Minute

// HTTPConfig configures an HTTP handler. Zero values select the defaults.
type HTTPConfig struct {
	// URL is the absolute http or https URL; required. Messages mask its
	// query values, fragment and password.
	URL string
	// Method is the request method. Default: POST.
	Method string
	// Headers are added to every request; they may replace Content-Type.
	// X-Scheduler- names are reserved. Host sets the request's Host.
	Headers map[string]string
	// FollowRedirects follows up to 10 redirects. One to another origin
	// loses Headers and Host; one from https to http, or one that turns
	// the method into GET, is refused. Default: false, a 3xx fails the
	// job permanently.
	FollowRedirects bool
	// Client sends the requests; its CheckRedirect is unused. Default: a
	// client without an overall timeout.
	Client *http.Client
	// Timeout bounds each attempt, body included. Default: the context's
	// deadline if any, else DefaultHTTPTimeout.
	Timeout time.Duration
	// HeaderTimeout bounds the wait for the response headers. Default: none.
	HeaderTimeout time.Duration
	// Clock times timeouts and Retry-After dates. Default: clock.Real{}.
	Clock clock.Clock
	// Logger receives one debug event per request. Default: discard.
	Logger *slog.Logger
}

// HTTP is a queue.Handler that sends each job's payload to a URL. It is
// safe for concurrent use.
//
// The body is the payload as application/json ({} when empty), with
// headers X-Scheduler-Job-Id, X-Scheduler-Key (the dedup key, to ignore
// repeats) and X-Scheduler-Attempt. A 2xx is success. A 4xx other than
// 408 and 429, or a 3xx not followed, fails the job permanently. 429 and
// 503 delay the next attempt by their Retry-After, capped at 24h. Any
// other status, network error, timeout, unreadable body or end of the
// context is an ordinary failed attempt. The status line and the body's
// first 4 KiB become the job's output.
type HTTP struct {
	url           string
	display       string     // url masked, for messages
	secrets       redact.Set // the url's password and query values
	method        string
	headers       map[string]string
	host          string
	follow        bool
	timeout       time.Duration
	headerTimeout time.Duration
	client        *http.Client
	clock         clock.Clock
	log           *slog.Logger
}

// NewHTTP checks cfg and returns an HTTP handler.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	display := redact.URL(cfg.URL)
	u, err := url.Parse(cfg.URL)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			ue.URL = display
		}
		return nil, fmt.Errorf("parse url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("url %s: scheme must be http or https", display)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("url %s: host is missing", display)
	}
	h := &HTTP{
		url:           cfg.URL,
		display:       display,
		secrets:       redact.NewSet(redact.URLSecrets(cfg.URL)...),
		method:        strings.ToUpper(cfg.Method),
		headers:       make(map[string]string, len(cfg.Headers)),
		follow:        cfg.FollowRedirects,
		timeout:       cfg.Timeout,
		headerTimeout: cfg.HeaderTimeout,
		client:        cfg.Client,
		clock:         cfg.Clock,
		log:           cfg.Logger,
	}
	if h.method == "" {
		h.method = http.MethodPost
	}
	if h.timeout < 0 || h.headerTimeout < 0 {
		return nil, fmt.Errorf("timeout %s or header timeout %s is negative", h.timeout, h.headerTimeout)
	}
	if _, err := http.NewRequest(h.method, h.url, nil); err != nil {
		return nil, fmt.Errorf("method %q: %w", cfg.Method, h.mask(err))
	}
	for k, v := range cfg.Headers {
		if err := checkHeader(k, v); err != nil {
			return nil, err
		}
		k = http.CanonicalHeaderKey(k)
		if k == "Host" {
			h.host = v
			continue
		}
		h.headers[k] = v
	}
	if h.client == nil {
		h.client = &http.Client{}
	}
	if h.clock == nil {
		h.clock = clock.Real{}
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.log = h.log.With(logKeyComponent, "http")
	return h, nil
}

func checkHeader(k, v string) error {
	if k == "" {
		return errors.New("header name is empty")
	}
	for _, r := range k {
		if !isTokenRune(r) {
			return fmt.Errorf("header name %q: invalid character %q", k, r)
		}
	}
	if strings.HasPrefix(http.CanonicalHeaderKey(k), headerPrefix) {
		return fmt.Errorf("header %s: names starting with %s are reserved", k, headerPrefix)
	}
	if http.CanonicalHeaderKey(k) == "Content-Length" {
		return errors.New("header Content-Length is set from the payload")
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("header %s: value contains CR, LF or NUL", k)
	}
	return nil
}

// isTokenRune reports whether r may appear in an HTTP token (RFC 9110).
func isTokenRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// Work sends job's payload and records the response. The URL's password
// and query values are masked wherever the output or error quotes them,
// and so are the query values of any URL in an error.
func (h *HTTP) Work(ctx context.Context, job *queue.Job) error {
	out, err := h.do(ctx, job)
	if len(out) > 0 && !h.secrets.Empty() {
		out = []byte(h.secrets.Apply(string(out)))
	}
	job.SetOutput(out)
	return h.mask(err)
}

// mask returns err with URL query values and h's secrets masked in its
// text; its chain is err's.
func (h *HTTP) mask(err error) error {
	if err == nil {
		return nil
	}
	msg := h.secrets.Apply(redact.URLs(err.Error()))
	if msg == err.Error() {
		return err
	}
	return &maskedError{msg: msg, err: err}
}

// maskedError is an error whose text had secrets masked.
type maskedError struct {
	msg string
	err error
}

func (e *maskedError) Error() string { return e.msg }
func (e *maskedError) Unwrap() error { return e.err }

func (h *HTTP) do(ctx context.Context, job *queue.Job) ([]byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	headersIn := make(chan struct{})
	defer h.watch(ctx, cancel, headersIn)()

	body := []byte(job.Payload)
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	req, err := http.NewRequestWithContext(ctx, h.method, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, queue.Permanent(fmt.Errorf("build request %s %s: %w", h.method, h.display, err))
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	if h.host != "" {
		req.Host = h.host
	}
	req.Header.Set(headerJobID, strconv.FormatInt(job.ID, 10))
	req.Header.Set(headerKey, job.Key)
	req.Header.Set(headerAttempt, strconv.Itoa(job.Attempt))
	if tp := queue.Traceparent(ctx); tp != "" {
		// The attempt's span: the server's spans join it.
		req.Header.Set("Traceparent", tp)
		if ts := queue.Tracestate(ctx); ts != "" {
			req.Header.Set("Tracestate", ts)
		}
	}

	// A copy, so this request's redirect policy can note why it stopped.
	client := *h.client
	var redirects int
	var refused error
	client.CheckRedirect = func(next *http.Request, via []*http.Request) error {
		if err := h.checkRedirect(next, via); err != nil {
			refused = err
			// The 3xx response becomes the attempt's result.
			return http.ErrUseLastResponse
		}
		redirects++
		return nil
	}

	start := h.clock.Monotonic()
	resp, err := client.Do(req)
	close(headersIn)
	if err != nil {
		if err := h.timedOut(ctx, "waiting for the response headers"); err != nil {
			return nil, err
		}
		return nil, err // Work masks the URL it names
	}
	// The job's page shows the status and the body as they come.
	live := h.liveWriter(ctx)
	fmt.Fprintf(live, "%s %s\n", resp.Proto, resp.Status)
	// Closing a body not read to its end closes the connection.
	snippet, readErr := io.ReadAll(io.TeeReader(io.LimitReader(resp.Body, httpOutput), live))
	resp.Body.Close()
	h.log.DebugContext(ctx, "http request done",
		logKeyJobID, job.ID, logKeyJobType, job.Type, logKeyAttempt, job.Attempt,
		logKeyStatus, resp.StatusCode, logKeyDuration, h.clock.Monotonic()-start)

	out := make([]byte, 0, len(resp.Proto)+len(resp.Status)+2+len(snippet))
	out = fmt.Appendf(out, "%s %s\n", resp.Proto, resp.Status)
	out = append(out, snippet...)
	if readErr != nil {
		// Incomplete: whatever the status, the attempt did not finish.
		if err := h.timedOut(ctx, "reading the response body after status "+resp.Status); err != nil {
			return out, err
		}
		return out, fmt.Errorf("%s %s: read the response body after status %s: %w", h.method, h.display, resp.Status, readErr)
	}
	return out, h.statusError(resp, snippet, redirects, refused)
}

// watch cancels ctx with a *queue.TimeoutError cause at the attempt's
// timeout or, until headersIn closes, its header timeout. The timers
// start before it returns, so a fake clock can move at once. stop ends
// the watch and waits for it.
func (h *HTTP) watch(ctx context.Context, cancel context.CancelCauseFunc, headersIn <-chan struct{}) (stop func()) {
	timeout := h.timeout
	if _, ok := ctx.Deadline(); !ok && timeout == 0 {
		timeout = DefaultHTTPTimeout
	}
	var attemptC, headerC <-chan time.Time
	if timeout > 0 {
		attemptC = h.clock.After(timeout)
	}
	if h.headerTimeout > 0 && (timeout == 0 || h.headerTimeout < timeout) {
		headerC = h.clock.After(h.headerTimeout)
	}
	if attemptC == nil && headerC == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-headersIn:
				headersIn, headerC = nil, nil
			case <-headerC:
				cancel(&queue.TimeoutError{Timeout: h.headerTimeout})
				return
			case <-attemptC:
				cancel(&queue.TimeoutError{Timeout: timeout})
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// timedOut returns the error of an attempt out of time doing what, or nil
// when ctx did not end at a deadline. Its chain holds the cause.
func (h *HTTP) timedOut(ctx context.Context, what string) error {
	cause := context.Cause(ctx)
	if ctx.Err() == nil || !errors.Is(cause, context.DeadlineExceeded) {
		return nil
	}
	return &runError{
		msg:  fmt.Sprintf("%s %s: %s %s", h.method, h.display, timeoutText(cause), what),
		errs: []error{cause},
	}
}

// errRedirectsOff is why a redirect is not followed by default.
var errRedirectsOff = errors.New("redirects are not followed (follow_redirects is off)")

// checkRedirect decides whether the client may follow a 3xx to next, and
// strips what must not go to another origin. net/http has already copied
// the headers into next and may have made its method GET.
func (h *HTTP) checkRedirect(next *http.Request, via []*http.Request) error {
	first, prev := via[0], via[len(via)-1]
	switch {
	case !h.follow:
		return errRedirectsOff
	case len(via) > maxRedirects:
		return fmt.Errorf("redirect refused: stopped after %d redirects", maxRedirects)
	case prev.URL.Scheme == "https" && next.URL.Scheme != "https":
		return fmt.Errorf("redirect refused: %s downgrades https to %s", redact.URL(next.URL.String()), next.URL.Scheme)
	case next.Method != first.Method:
		return fmt.Errorf("redirect refused: following it would send %s without the payload instead of %s", next.Method, first.Method)
	}
	// A Referer would carry secrets of the path or query.
	next.Header.Del("Referer")
	if !sameOrigin(first.URL, next.URL) {
		for k := range h.headers {
			next.Header.Del(k)
		}
		next.Header.Set("Content-Type", "application/json")
		next.Host = ""
	}
	return nil
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// statusError maps a response to the job's fate. refused is why resp's
// redirect was not followed.
func (h *HTTP) statusError(resp *http.Response, body []byte, redirects int, refused error) error {
	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	where := h.display
	if redirects > 0 && resp.Request != nil {
		where += " redirected to " + redact.URL(resp.Request.URL.String())
	}
	msg := fmt.Sprintf("%s %s: status %s", h.method, where, resp.Status)
	if code >= 300 && code < 400 {
		if loc, err := resp.Location(); err == nil {
			msg += ", location " + redact.URL(loc.String())
		}
		if refused == nil {
			refused = errors.New("redirect not followed")
		}
		msg += ": " + refused.Error()
	}
	if len(body) > 0 {
		// An error document says what is wrong at its head.
		msg += fmt.Sprintf("; body: %q", body[:min(len(body), errorOutput)])
	}
	err := errors.New(msg)
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), h.clock.Now()); ok {
			return queue.RetryAfter(d, err)
		}
		return err
	case code == http.StatusRequestTimeout:
		return err
	case code >= 300 && code < 400:
		return queue.Permanent(err)
	case code >= 400 && code < 500:
		return queue.Permanent(err)
	}
	return err
}

// parseRetryAfter reads Retry-After, seconds or an HTTP date, as a delay
// in [0, maxRetryAfter]; ok is false when v is empty or malformed.
func parseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		secs, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return maxRetryAfter, true
			}
			return 0, false
		}
		if secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), maxRetryAfter), true
}

// liveWriter returns the writer of the attempt's live output
// (queue.OutputWriter) with h's secrets masked: by whole lines, so that a
// secret is never split between two writes, when there are any.
func (h *HTTP) liveWriter(ctx context.Context) io.Writer {
	w := queue.OutputWriter(ctx)
	if h.secrets.Empty() || w == io.Discard {
		return w
	}
	return &maskedLines{w: w, secrets: h.secrets}
}

// maskedLines writes the complete lines written to it, secrets masked, to
// w; a last line without its newline is not written (the attempt's output
// has it).
type maskedLines struct {
	w       io.Writer
	secrets redact.Set
	partial []byte
}

func (m *maskedLines) Write(b []byte) (int, error) {
	m.partial = append(m.partial, b...)
	if i := bytes.LastIndexByte(m.partial, '\n'); i >= 0 {
		io.WriteString(m.w, m.secrets.Apply(string(m.partial[:i+1])))
		m.partial = append(m.partial[:0], m.partial[i+1:]...)
	}
	return len(b), nil
}
