package dashboard

import (
	"bytes"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/internal/passhash"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// testIterations keeps a login cheap in tests; the config's hashes have
// at least passhash.MinIterations.
const testIterations = 1000

// credentials returns an [http] table with the user ann (password
// "ann's password") and a token ("the token"), actions as given.
func credentials(t *testing.T, actions bool) config.HTTPSettings {
	t.Helper()
	user, err := passhash.New("ann's password", testIterations)
	if err != nil {
		t.Fatal(err)
	}
	token, err := passhash.New("the token", testIterations)
	if err != nil {
		t.Fatal(err)
	}
	return config.HTTPSettings{Dashboard: true, Actions: actions, TokenHash: token,
		Users: []config.HTTPUser{{Name: "ann", PasswordHash: user}}}
}

// logBuffer collects a logger's lines; safe for concurrent use.
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

// site is a test server of the whole dashboard: pages, login and actions.
type site struct {
	*httptest.Server
	logs *logBuffer
}

// newSite serves the dashboard over q as the daemon does, guarded by h;
// each of opts changes the guard before it serves.
func newSite(t *testing.T, q *queue.Client, cfg *config.Config, h config.HTTPSettings, clk clock.Clock, opts ...func(*Auth)) *site {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	auth, err := NewAuth(AuthConfig{HTTP: h, Clock: clk, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(auth)
	}
	cf := func() *config.Config { return cfg }
	pages, err := New(Config{Queue: q, ConfigFunc: cf, Clock: clk, SessionFunc: auth.Session, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	actions, err := NewActions(ActionsConfig{Queue: q, ConfigFunc: cf, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(auth.Handler(pages, actions))
	t.Cleanup(srv.Close)
	return &site{Server: srv, logs: logs}
}

// browser is a client with its own cookies that does not follow redirects.
type browser struct {
	t   *testing.T
	s   *site
	c   *http.Client
	jar http.CookieJar
}

func (s *site) browser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, s: s, jar: jar, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends req and returns the response with its body read.
func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	for k, want := range map[string]string{"Content-Security-Policy": contentSecurityPolicy,
		"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"} {
		if got := resp.Header.Get(k); got != want {
			b.t.Errorf("%s %s: %s %q, want %q", req.Method, req.URL.Path, k, got, want)
		}
	}
	return resp, string(body)
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.s.URL+path, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(req)
}

// post sends form to path, with the extra headers given as name, value.
func (b *browser) post(path string, form url.Values, headers ...string) (*http.Response, string) {
	b.t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.s.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return b.do(req)
}

// login logs in with form and fails the test unless it worked.
func (b *browser) login(form url.Values) {
	b.t.Helper()
	resp, body := b.post("/login", form)
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("POST /login %v = %d, want 303:\n%s", form, resp.StatusCode, body)
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token in the forms of the page at path.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	resp, body := b.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil {
		b.t.Fatalf("GET %s = %d, no csrf field:\n%s", path, resp.StatusCode, body)
	}
	return html.UnescapeString(m[1])
}

var annLogin = url.Values{"user": {"ann"}, "password": {"ann's password"}}

func newAuthSite(t *testing.T, h config.HTTPSettings, clk clock.Clock, opts ...func(*Auth)) *site {
	t.Helper()
	q := openQueue(t, filepath.Join(t.TempDir(), "q.db"), clk)
	return newSite(t, q, parseConfig(t), h, clk, opts...)
}

// TestLogin: with credentials every page but the static files sends to
// the login; a wrong password gets no session and is logged with its
// address; the right one gets a session cookie (HttpOnly, SameSite=Strict,
// Path=/) and the page asked for, which names who is logged in.
func TestLogin(t *testing.T) {
	t.Parallel()
	s := newAuthSite(t, credentials(t, false), clock.NewFake(now))
	b := s.browser(t)
	for _, path := range []string{"/", "/jobs?state=dead", "/runs/1", "/alarms"} {
		resp, _ := b.get(path)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/login?next="+url.QueryEscape(path) {
			t.Errorf("GET %s without login = %d to %q, want 303 to the login", path, resp.StatusCode, loc)
		}
	}
	if resp, _ := b.get("/static/style.css"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /static/style.css without login = %d, want 200: the login page needs it", resp.StatusCode)
	}
	resp, body := b.get("/login?next=%2Fjobs")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<form id="login"`) ||
		!strings.Contains(body, `name="user"`) || !strings.Contains(body, `name="password"`) || !strings.Contains(body, `name="token"`) {
		t.Fatalf("GET /login = %d, want form#login with user, password and token:\n%s", resp.StatusCode, body)
	}

	// Fewer than maxLoginFailures, which would refuse the right password.
	for _, wrong := range []url.Values{
		{"user": {"ann"}, "password": {"wrong"}},
		{"user": {"bob"}, "password": {"ann's password"}},
		{"token": {"ann's password"}},
		{},
	} {
		resp, body := b.post("/login", wrong)
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) > 0 || !strings.Contains(body, `id="problem"`) {
			t.Errorf("POST /login %v = %d, cookies %v, want 401 with a problem and no cookie", wrong, resp.StatusCode, resp.Cookies())
		}
	}
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / after failed logins = %d, want 303 to the login", resp.StatusCode)
	}
	logs := s.logs.String()
	if n := strings.Count(logs, `msg="dashboard login failed" component=dashboard remote_addr=127.0.0.1`); n != 4 {
		t.Errorf("%d failed logins logged with their address, want 4:\n%s", n, logs)
	}
	if strings.Contains(logs, "wrong") || strings.Contains(logs, "password") || strings.Contains(logs, "user=bob") {
		t.Errorf("the log holds what was typed:\n%s", logs)
	}

	form := url.Values{"user": {"ann"}, "password": {"ann's password"}, "next": {"/jobs?state=dead"}}
	resp, _ = b.post("/login", form)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/jobs?state=dead" {
		t.Fatalf("POST /login = %d to %q, want 303 to /jobs?state=dead", resp.StatusCode, loc)
	}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == sessionCookie {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Secure || c.MaxAge != int(DefaultSessionTTL/time.Second) || len(c.Value) < 40 {
		t.Fatalf("session cookie %+v, want HttpOnly, SameSite=Strict, Path=/, not Secure over HTTP, 12 h, a long random id", c)
	}
	resp, body = b.get("/jobs?state=dead")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<span id="who">ann</span>`) || !strings.Contains(body, `<form id="logout" method="post" action="/logout">`) {
		t.Fatalf("GET /jobs after login = %d, want #who ann and the logout form:\n%s", resp.StatusCode, body)
	}
	if strings.Contains(body, "data-action=") {
		t.Errorf("actions = false, yet the page has action forms:\n%s", body)
	}
	if !strings.Contains(s.logs.String(), `msg="dashboard login" component=dashboard who=ann remote_addr=127.0.0.1`) {
		t.Errorf("the login is not logged with who and from where:\n%s", s.logs.String())
	}
	if resp, _ := b.get("/login"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /login when logged in = %d, want 303 to the dashboard", resp.StatusCode)
	}

	// The token logs in as "token".
	tb := s.browser(t)
	tb.login(url.Values{"token": {"the token"}})
	if _, body := tb.get("/"); !strings.Contains(body, `<span id="who">token</span>`) {
		t.Errorf("after a token login, the page does not name the token:\n%s", body)
	}
}

// TestLoginSecureCookie: over TLS, or behind a proxy that says so, the
// session cookie and the browser's are Secure.
func TestLoginSecureCookie(t *testing.T) {
	t.Parallel()
	s := newAuthSite(t, credentials(t, false), clock.NewFake(now))
	resp, _ := s.browser(t).post("/login", annLogin, "X-Forwarded-Proto", "https")
	cs := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cs) != 2 || cs[0].Name != sessionCookie || cs[1].Name != browserCookie {
		t.Fatalf("POST /login over https = %d, cookies %+v, want the session's and the browser's", resp.StatusCode, cs)
	}
	for _, c := range cs {
		if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
			t.Errorf("cookie %+v, want Secure, HttpOnly, SameSite=Strict", c)
		}
	}
}

// TestLoginRateLimit: after maxLoginFailures failures an address waits
// loginWindow, even with the right password; then it logs in.
func TestLoginRateLimit(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	s := newAuthSite(t, credentials(t, false), clk)
	b := s.browser(t)
	for range maxLoginFailures {
		if resp, _ := b.post("/login", url.Values{"user": {"ann"}, "password": {"guess"}}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password = %d, want 401", resp.StatusCode)
		}
	}
	resp, body := b.post("/login", annLogin)
	if resp.StatusCode != http.StatusTooManyRequests || len(resp.Cookies()) > 0 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("login after %d failures = %d, cookies %v, want 429 with Retry-After and no session:\n%s", maxLoginFailures, resp.StatusCode, resp.Cookies(), body)
	}
	if !strings.Contains(s.logs.String(), `msg="dashboard login refused: too many failures" component=dashboard remote_addr=127.0.0.1`) {
		t.Errorf("the refusal is not logged:\n%s", s.logs.String())
	}
	clk.Advance(loginWindow - time.Second)
	if resp, _ := b.post("/login", annLogin); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("login within the window = %d, want 429", resp.StatusCode)
	}
	clk.Advance(time.Second)
	b.login(annLogin)
}

// TestLogoutAndExpiry: logout needs the CSRF token and ends the session
// for good; a session ends by itself after its TTL.
func TestLogoutAndExpiry(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	s := newAuthSite(t, credentials(t, false), clk)
	b := s.browser(t)
	b.login(annLogin)
	csrf := b.csrf("/")
	if resp, _ := b.post("/logout", url.Values{"csrf": {"wrong"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /logout with a wrong csrf = %d, want 403", resp.StatusCode)
	}
	if resp, _ := b.post("/logout", url.Values{"csrf": {csrf}}, "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /logout from another origin = %d, want 403", resp.StatusCode)
	}
	u, _ := url.Parse(s.URL)
	old := b.jar.Cookies(u)
	if resp, _ := b.post("/logout", url.Values{"csrf": {csrf}}); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("POST /logout = %d to %q, want 303 to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / after logout = %d, want 303 to the login", resp.StatusCode)
	}
	b.jar.SetCookies(u, old) // the old cookie, kept by someone
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / with the cookie of an ended session = %d, want 303 to the login", resp.StatusCode)
	}

	b.login(annLogin)
	clk.Advance(DefaultSessionTTL - time.Second)
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET / just before the session ends = %d, want 200", resp.StatusCode)
	}
	clk.Advance(time.Second)
	if resp, _ := b.get("/"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / once the session ended = %d, want 303 to the login", resp.StatusCode)
	}
}

// TestNoCredentials: without a credential the pages read without a login,
// show no action form, and every action is refused.
func TestNoCredentials(t *testing.T) {
	t.Parallel()
	s := newAuthSite(t, config.HTTPSettings{Dashboard: true}, clock.NewFake(now))
	b := s.browser(t)
	resp, body := b.get("/")
	if resp.StatusCode != http.StatusOK || strings.Contains(body, "data-action=") || strings.Contains(body, `id="who"`) || strings.Contains(body, "logout") {
		t.Fatalf("GET / = %d, want the page without who, logout or actions:\n%s", resp.StatusCode, body)
	}
	if resp, _ := b.get("/login"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("GET /login = %d to %q, want 303 to /: there is nothing to log in to", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := b.post("/actions/pause", url.Values{"schedule": {"nightly"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST /actions/pause = %d, want 403", resp.StatusCode)
	}
}

func TestLocalPath(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"/jobs?state=dead", "/jobs?state=dead"},
		{"/schedules/nightly?item=tenant%3Dacme", "/schedules/nightly?item=tenant%3Dacme"},
		{"/", "/"},
		{"", "/"},
		{"https://evil.example/", "/"},
		{"//evil.example/x", "/"},
		{"/\\evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"javascript:alert(1)", "/"},
		{"jobs", "/"},
		{"/\r\nLocation: x", "/"},
	}
	for _, tt := range tests {
		if got := localPath(tt.in); got != tt.want {
			t.Errorf("localPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAddressKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
		{"not an address", "not an address"},
	}
	for _, tt := range tests {
		if got := addressKey(tt.in); got != tt.want {
			t.Errorf("addressKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
