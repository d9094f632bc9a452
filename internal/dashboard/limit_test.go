package dashboard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule/config"
)

var wrongAnn = url.Values{"user": {"ann"}, "password": {"guess"}}

// behind returns h with the test server's address, 127.0.0.1, as a
// trusted proxy.
func behind(h config.HTTPSettings, proxies ...string) config.HTTPSettings {
	for _, p := range proxies {
		h.TrustedProxies = append(h.TrustedProxies, netip.MustParsePrefix(p))
	}
	return h
}

// TestLoginParallelGuesses: guesses sent together from one address are
// counted before their checks, so that no more of them are checked than
// the address may make in a window, however many arrive at once.
func TestLoginParallelGuesses(t *testing.T) {
	t.Parallel()
	const n = 40
	entered, release := make(chan struct{}, n), make(chan struct{})
	var checked atomic.Int32
	s := newAuthSite(t, credentials(t, false), clock.NewFake(now), func(a *Auth) {
		a.checks = make(chan struct{}, n) // every guess let through is checked at once
		a.checkFunc = func(token, user, password string) string {
			checked.Add(1)
			entered <- struct{}{}
			<-release
			return a.check(token, user, password)
		}
	})
	codes := make(chan int, n)
	for range n {
		go func() {
			resp, err := noRedirect.PostForm(s.URL+"/login", wrongAnn)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	// Hold every check until each guess is either being checked or
	// answered: a limit counted after the check lets them all through.
	got := map[int]int{}
	for seen := 0; seen < n; seen++ {
		select {
		case <-entered:
		case c := <-codes:
			got[c]++
		case <-time.After(time.Minute): // failure deadline, not a sync point
			t.Fatalf("after %d of %d guesses, the others neither answered nor checked", seen, n)
		}
	}
	close(release)
	for range int(checked.Load()) {
		got[<-codes]++
	}
	if c := checked.Load(); c != maxLoginFailures {
		t.Errorf("%d of %d parallel guesses checked against the hash, want %d", c, n, maxLoginFailures)
	}
	if got[http.StatusUnauthorized] != maxLoginFailures || got[http.StatusTooManyRequests] != n-maxLoginFailures {
		t.Errorf("answers %v, want %d × 401 and %d × 429", got, maxLoginFailures, n-maxLoginFailures)
	}
}

// TestLoginBehindProxy: behind a trusted proxy each client the proxy
// names in X-Forwarded-For (or Forwarded) has its own limit, so that one
// client's guesses do not lock out another; the addresses left of the one
// the proxy appended are the client's own words and change nothing.
func TestLoginBehindProxy(t *testing.T) {
	t.Parallel()
	s := newAuthSite(t, behind(credentials(t, false), "127.0.0.1/32"), clock.NewFake(now))
	guesser := s.browser(t)
	for range maxLoginFailures {
		if resp, _ := guesser.post("/login", wrongAnn, "X-Forwarded-For", "198.51.100.1"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password = %d, want 401", resp.StatusCode)
		}
	}
	for _, h := range [][2]string{
		{"X-Forwarded-For", "198.51.100.1"},
		{"X-Forwarded-For", "203.0.113.9, 198.51.100.1"}, // a forged first hop
		{"Forwarded", `for="198.51.100.1:4711";proto=https`},
	} {
		resp, body := s.browser(t).post("/login", annLogin, h[0], h[1])
		if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(body, "from your address") {
			t.Errorf("login from the locked-out client (%s: %s) = %d, want 429 naming the address:\n%s", h[0], h[1], resp.StatusCode, body)
		}
	}
	if resp, body := s.browser(t).post("/login", annLogin, "X-Forwarded-For", "198.51.100.2"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login from another client of the proxy = %d, want 303:\n%s", resp.StatusCode, body)
	}
	logs := s.logs.String()
	for _, want := range []string{
		`msg="dashboard login failed" component=dashboard remote_addr=198.51.100.1 user=ann`,
		`msg="dashboard login refused: too many failures" component=dashboard remote_addr=198.51.100.1 limit=address`,
		`msg="dashboard login" component=dashboard who=ann remote_addr=198.51.100.2`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line %s in:\n%s", want, logs)
		}
	}
}

// TestLoginSpoofedForwardedFor: X-Forwarded-For from an address that is
// not a trusted proxy is ignored: its guesses count against that address
// whatever the header says.
func TestLoginSpoofedForwardedFor(t *testing.T) {
	t.Parallel()
	s := newAuthSite(t, behind(credentials(t, false), "10.0.0.0/8"), clock.NewFake(now))
	for i := range maxLoginFailures {
		if resp, _ := s.browser(t).post("/login", wrongAnn, "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i+1)); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong password = %d, want 401", resp.StatusCode)
		}
	}
	if resp, _ := s.browser(t).post("/login", annLogin, "X-Forwarded-For", "198.51.100.99"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("login from the same address with a new X-Forwarded-For = %d, want 429", resp.StatusCode)
	}
	if logs := s.logs.String(); strings.Contains(logs, "198.51.100.") || !strings.Contains(logs, "remote_addr=127.0.0.1") {
		t.Errorf("the log names the forged addresses, or not the real one:\n%s", logs)
	}
}

// TestLoginAccountLimit: guesses at one account from many addresses share
// the account's limit, a wait that doubles with every failure past
// userFreeFailures; a right password from a new browser waits its turn
// like a guess and logs in once the wait ends, without giving guessers a
// turn; a browser that logged in to the account before is held back by
// its own failures only, and logs in at once during the attack.
func TestLoginAccountLimit(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	s := newAuthSite(t, behind(credentials(t, false), "127.0.0.1/32"), clk)
	owner := s.browser(t)
	if resp, _ := owner.post("/login", annLogin, "X-Forwarded-For", "192.0.2.1"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("first login = %d, want 303", resp.StatusCode)
	}
	addr := 0
	guess := func() (*http.Response, string) {
		t.Helper()
		addr++
		return s.browser(t).post("/login", wrongAnn, "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", addr))
	}
	for range userFreeFailures {
		if resp, _ := guess(); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d = %d, want 401", addr, resp.StatusCode)
		}
	}
	wantWait := func(resp *http.Response, body string, wait time.Duration) {
		t.Helper()
		if want := fmt.Sprint(int(wait.Seconds()) + 1); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != want ||
			!strings.Contains(body, "for this user from browsers that have not logged in with it before") {
			t.Fatalf("= %d, Retry-After %q, want 429 after %s (Retry-After %s) naming the account:\n%s",
				resp.StatusCode, resp.Header.Get("Retry-After"), wait, want, body)
		}
	}
	resp, body := guess()
	wantWait(resp, body, userDelay)

	newcomer := s.browser(t)
	resp, body = newcomer.post("/login", annLogin, "X-Forwarded-For", "203.0.113.5")
	wantWait(resp, body, userDelay)
	if resp, body := owner.post("/login", annLogin, "X-Forwarded-For", "203.0.113.6"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login from the browser that logged in before, during the attack = %d, want 303:\n%s", resp.StatusCode, body)
	}

	clk.Advance(userDelay)
	if resp, body := newcomer.post("/login", annLogin, "X-Forwarded-For", "203.0.113.5"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right password once the wait ended = %d, want 303:\n%s", resp.StatusCode, body)
	}
	// The right password gave its turn back: the next guess is checked,
	// and sets a wait twice as long.
	if resp, _ := guess(); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("guess after the wait = %d, want 401", resp.StatusCode)
	}
	resp, body = guess()
	wantWait(resp, body, 2*userDelay)
	clk.Advance(2 * userDelay)
	if resp, _ := guess(); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("guess after the second wait = %d, want 401", resp.StatusCode)
	}
	resp, body = guess()
	wantWait(resp, body, 4*userDelay)

	// A forged browser cookie is no browser that logged in before.
	u, _ := url.Parse(s.URL + "/login")
	cs := owner.jar.Cookies(u)
	forged := s.browser(t)
	for _, c := range cs {
		if c.Name == browserCookie {
			i := strings.LastIndex(c.Value, ".")
			forged.jar.SetCookies(u, []*http.Cookie{{Name: browserCookie, Value: c.Value[:i+1] + "AAAA" + c.Value[i+5:], Path: "/login"}})
		}
	}
	resp, body = forged.post("/login", annLogin, "X-Forwarded-For", "203.0.113.7")
	wantWait(resp, body, 4*userDelay)

	// The owner's browser has a limit of its own.
	for range maxLoginFailures {
		if resp, _ := owner.post("/login", wrongAnn, "X-Forwarded-For", "203.0.113.6"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the owner's typo = %d, want 401", resp.StatusCode)
		}
	}
	if resp, body := owner.post("/login", annLogin, "X-Forwarded-For", "203.0.113.6"); resp.StatusCode != http.StatusTooManyRequests ||
		!strings.Contains(body, "from this browser") {
		t.Fatalf("the owner after %d typos = %d, want 429 naming the browser:\n%s", maxLoginFailures, resp.StatusCode, body)
	}
}

// TestLoginWaitCap: the account's wait stops growing at userMaxDelay.
func TestLoginWaitCap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		n    int
		want time.Duration
	}{
		{userFreeFailures, userDelay},
		{userFreeFailures + 1, 2 * userDelay},
		{userFreeFailures + 3, 8 * userDelay},
		{userFreeFailures + 4, userMaxDelay},
		{userFreeFailures + 1000, userMaxDelay},
	}
	for _, tt := range tests {
		if got := accountWait(tt.n); got != tt.want {
			t.Errorf("accountWait(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	c := newClients(behind(config.HTTPSettings{}, "127.0.0.1/32", "10.0.0.0/8", "::1/128"))
	tests := []struct {
		name    string
		remote  string
		headers [][2]string
		want    string
	}{
		{"direct", "192.0.2.1:5000", nil, "192.0.2.1"},
		{"untrusted peer's header", "192.0.2.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.7"}}, "192.0.2.1"},
		{"proxy without header", "127.0.0.1:5000", nil, "127.0.0.1"},
		{"proxy", "127.0.0.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.7"}}, "198.51.100.7"},
		{"forged first hop", "127.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.1, 198.51.100.7"}}, "198.51.100.7"},
		{"two headers", "127.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.1"}, {"X-Forwarded-For", "198.51.100.7"}}, "198.51.100.7"},
		{"two proxies", "127.0.0.1:5000", [][2]string{{"X-Forwarded-For", "203.0.113.1, 198.51.100.7, 10.1.2.3"}}, "198.51.100.7"},
		{"all proxies", "127.0.0.1:5000", [][2]string{{"X-Forwarded-For", "10.0.0.2, 10.0.0.3"}}, "10.0.0.2"},
		{"with a port", "127.0.0.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.7:5555"}}, "198.51.100.7"},
		{"ipv6", "[::1]:5000", [][2]string{{"X-Forwarded-For", "[2001:db8::1]:443"}}, "2001:db8::1"},
		{"mapped proxy", "[::ffff:127.0.0.1]:5000", [][2]string{{"X-Forwarded-For", "198.51.100.7"}}, "198.51.100.7"},
		{"not an address", "127.0.0.1:5000", [][2]string{{"X-Forwarded-For", "198.51.100.7, nonsense"}}, "127.0.0.1"},
		{"forwarded", "127.0.0.1:5000", [][2]string{{"Forwarded", "for=198.51.100.7;proto=https"}}, "198.51.100.7"},
		{"forwarded chain", "127.0.0.1:5000", [][2]string{{"Forwarded", `for=203.0.113.1, For="[2001:db8::1]:4711";by=10.0.0.1`}}, "2001:db8::1"},
		{"forwarded unknown", "127.0.0.1:5000", [][2]string{{"Forwarded", "for=unknown"}}, "127.0.0.1"},
		{"x-forwarded-for first", "127.0.0.1:5000", [][2]string{{"Forwarded", "for=203.0.113.1"}, {"X-Forwarded-For", "198.51.100.7"}}, "198.51.100.7"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = tt.remote
		for _, h := range tt.headers {
			r.Header.Add(h[0], h[1])
		}
		if got := c.addr(r); got != tt.want {
			t.Errorf("%s: addr = %q, want %q", tt.name, got, tt.want)
		}
	}
	none := newClients(config.HTTPSettings{})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "127.0.0.1:5000"
	r.Header.Set("X-Forwarded-For", "198.51.100.7")
	if got := none.addr(r); got != "127.0.0.1" {
		t.Errorf("no trusted proxy: addr = %q, want 127.0.0.1", got)
	}
}

func TestHostAllowed(t *testing.T) {
	t.Parallel()
	c := newClients(config.HTTPSettings{Listen: "sched.lan:9464", Hosts: []string{"scheduler.example.com"}})
	for host, want := range map[string]bool{
		"localhost":                  true,
		"localhost:9464":             true,
		"LOCALHOST.:9464":            true,
		"127.0.0.1:9464":             true,
		"[::1]:9464":                 true,
		"[::1]":                      true,
		"192.0.2.7":                  true,
		"[2001:db8::1]:80":           true,
		"scheduler.example.com":      true,
		"Scheduler.Example.com.:443": true,
		"sched.lan:9464":             true,
		"evil.example":               false,
		"evil.example:9464":          false,
		"localhost.evil.example":     false,
		"127.0.0.1.nip.io":           false,
		"scheduler.example.com.evil": false,
		"":                           false,
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host = host
		if got := c.hostAllowed(r); got != want {
			t.Errorf("hostAllowed(Host %q) = %v, want %v", host, got, want)
		}
	}
}

// TestHostCheck: a page or an action under a name the dashboard does not
// answer to, as a page that rebinds its own name to this address sends,
// is refused with 421 and does nothing; localhost, the loopback addresses
// and the names of [http] hosts, with any port, are served.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(now)
	q := openQueue(t, filepath.Join(t.TempDir(), "q.db"), clk)
	seed(t, q)
	h := credentials(t, true)
	h.Hosts = []string{"scheduler.example.com"}
	s := newSite(t, q, parseConfig(t), h, clk)
	b := s.browser(t)
	b.login(annLogin)
	csrf := b.csrf("/")
	u, _ := url.Parse(s.URL)
	send := func(method, path, host string, form url.Values) (*http.Response, string) {
		t.Helper()
		var req *http.Request
		var err error
		if form != nil {
			req, err = http.NewRequest(method, s.URL+path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			req, err = http.NewRequest(method, s.URL+path, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for _, c := range b.jar.Cookies(u) { // the session's, whatever the Host
			req.AddCookie(c)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Header.Get("Content-Security-Policy"); got != contentSecurityPolicy {
			t.Errorf("%s %s with Host %s: Content-Security-Policy %q", method, path, host, got)
		}
		return resp, string(body)
	}
	for _, tt := range []struct {
		method, path string
		form         url.Values
	}{
		{"GET", "/", nil},
		{"GET", "/jobs?state=dead", nil},
		{"GET", "/schedules/nightly", nil},
		{"GET", "/login", nil},
		{"GET", "/static/style.css", nil},
		{"POST", "/login", annLogin},
		{"POST", "/actions/pause", url.Values{"schedule": {"nightly"}, "csrf": {csrf}}},
		{"POST", "/logout", url.Values{"csrf": {csrf}}},
	} {
		for _, host := range []string{"evil.example", "evil.example:" + u.Port()} {
			resp, body := send(tt.method, tt.path, host, tt.form)
			if resp.StatusCode != http.StatusMisdirectedRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
				!strings.Contains(body, `does not answer to the host "`+host+`"`) {
				t.Errorf("%s %s with Host %s = %d %q, want 421 in plain text", tt.method, tt.path, host, resp.StatusCode, body)
			}
		}
	}
	cs, err := q.Cursors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cs["nightly"].Paused {
		t.Error("a pause posted under another host name paused the schedule")
	}
	for _, host := range []string{"localhost:" + u.Port(), "127.0.0.1:" + u.Port(), "[::1]:" + u.Port(), "localhost",
		"scheduler.example.com", "SCHEDULER.example.com:443"} {
		if resp, body := send("GET", "/jobs", host, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("GET /jobs with Host %s = %d, want 200:\n%s", host, resp.StatusCode, body)
		}
	}
	if !strings.Contains(s.logs.String(), `msg="dashboard request refused: unknown host" component=dashboard remote_addr=127.0.0.1 path=/ host=evil.example`) {
		t.Errorf("the refusal is not logged:\n%s", s.logs.String())
	}

	// Without a login, as on loopback, the pages are what a rebinding
	// page would read.
	open := newAuthSite(t, config.HTTPSettings{Dashboard: true}, clk)
	ob := open.browser(t)
	req, _ := http.NewRequest(http.MethodGet, open.URL+"/", nil)
	req.Host = "evil.example:" + u.Port()
	if resp, _ := ob.do(req); resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("open dashboard, GET / with Host evil.example = %d, want 421", resp.StatusCode)
	}
	if resp, _ := ob.get("/"); resp.StatusCode != http.StatusOK {
		t.Errorf("open dashboard, GET / by its address = %d, want 200", resp.StatusCode)
	}
}
