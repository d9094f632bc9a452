package cli

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/scheduler-run/scheduler/internal/passhash"
)

// TestDaemonServesTheDashboard: with [http] listen set, the daemon serves
// the dashboard at / beside /metrics and /healthz, under its content
// security policy, with the configured schedules and their pages.
func TestDaemonServesTheDashboard(t *testing.T) {
	t.Parallel()
	dir := setup(t, metricsConfig)
	d := startDaemon(t, dir, nil)
	m := listenRE.FindStringSubmatch(d.waitLog("http listening"))
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", d.log())
	}
	base := "http://" + m[1]
	c := &http.Client{Timeout: deadline}
	resp, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "default-src 'self'; frame-ancestors 'none'") {
		t.Fatalf("GET /: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	body := scrape(t, base+"/")
	for _, want := range []string{`<table id="schedules">`, `<tr data-schedule="yearly"`, `<tr data-schedule="broken"`} {
		if !strings.Contains(body, want) {
			t.Errorf("/ lacks %s:\n%s", want, body)
		}
	}
	for _, path := range []string{"/schedules/yearly", "/jobs", "/alarms", "/static/style.css", "/metrics", "/healthz"} {
		scrape(t, base+path)
	}
	if _, code := get(t, base+"/schedules/nope"); code != http.StatusNotFound {
		t.Errorf("GET /schedules/nope: %d, want 404", code)
	}
}

// TestDashboardLoginAndActions: the daemon serves the dashboard at / on its
// [http] listener behind the login of [[http.user]], /metrics stays open
// to the scraper, and an action posted by a logged-in user pauses the
// schedule as -pause does, logged with who did it.
func TestDashboardLoginAndActions(t *testing.T) {
	t.Parallel()
	h, err := passhash.New("ann's password", passhash.MinIterations)
	if err != nil {
		t.Fatal(err)
	}
	dir := setup(t, `
[http]
listen = "127.0.0.1:0"
actions = true

[[http.user]]
name = "ann"
password_hash = "`+h.String()+`"

[tasks.ok]
command = ["true"]

[[schedule]]
name = "yearly"
cron = "@yearly"
task = "ok"
`)
	d := startDaemon(t, dir, nil)
	m := listenRE.FindStringSubmatch(d.waitLog("http listening"))
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", d.log())
	}
	base := "http://" + m[1]
	scrape(t, base+"/metrics")

	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(resp *http.Response, err error) (*http.Response, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	if resp, _ := fetch(c.Get(base + "/")); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next=%2F" {
		t.Fatalf("GET / without login = %d to %q, want 303 to the login", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := fetch(c.PostForm(base+"/login", url.Values{"user": {"ann"}, "password": {"ann's password"}})); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /login = %d, want 303", resp.StatusCode)
	}
	resp, body := fetch(c.Get(base + "/"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<tr data-schedule="yearly"`) || !strings.Contains(body, `<span id="who">ann</span>`) {
		t.Fatalf("GET / after login = %d:\n%s", resp.StatusCode, body)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatalf("no csrf field on the page:\n%s", body)
	}
	resp, _ = fetch(c.PostForm(base+"/actions/pause", url.Values{"csrf": {csrf[1]}, "schedule": {"yearly"}, "back": {"/schedules/yearly"}}))
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/schedules/yearly" {
		t.Fatalf("POST /actions/pause = %d to %q, want 303 to /schedules/yearly", resp.StatusCode, resp.Header.Get("Location"))
	}
	var st statusReport
	if err := json.Unmarshal([]byte(mustCLI(t, dir, "-status", "-json")), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Schedules) != 1 || !st.Schedules[0].Paused {
		t.Errorf("-status after the pause action: %+v, want yearly paused", st.Schedules)
	}
	d.waitLog(`msg="dashboard action" component=dashboard action=pause who=ann remote_addr=127.0.0.1 schedule=yearly`)
}

// TestDashboardHostCheck: the daemon's listener refuses a dashboard page
// under a name it does not answer to, as a page whose own name was rebound
// to 127.0.0.1 sends, and serves it by localhost, its addresses and the
// names of [http] hosts, with their port; /metrics and /healthz answer
// whatever the Host. -check says which names and proxies it trusts.
func TestDashboardHostCheck(t *testing.T) {
	t.Parallel()
	dir := setup(t, strings.Replace(metricsConfig, `listen = "127.0.0.1:0"`, `listen = "127.0.0.1:0"
hosts = ["scheduler.example.com"]
trusted_proxies = ["127.0.0.1", "10.0.0.0/8"]`, 1))
	check := mustCLI(t, dir, "-check")
	for _, want := range []string{
		"http listen: 127.0.0.1:0; dashboard: read without login\n",
		"http hosts: localhost, IP addresses, scheduler.example.com\n",
		"http trusted proxies: 127.0.0.1, 10.0.0.0/8 (the client is read from X-Forwarded-For or Forwarded)\n",
	} {
		if !strings.Contains(check, want) {
			t.Errorf("-check lacks %q:\n%s", want, check)
		}
	}
	d := startDaemon(t, dir, nil)
	m := listenRE.FindStringSubmatch(d.waitLog("http listening"))
	if m == nil {
		t.Fatalf("no listen address in the log:\n%s", d.log())
	}
	_, port, err := net.SplitHostPort(m[1])
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: deadline}
	get := func(path, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+m[1]+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/", "/jobs", "/login", "/static/style.css"} {
		if code, body := get(path, "evil.example:"+port); code != http.StatusMisdirectedRequest || !strings.Contains(body, `does not answer to the host "evil.example:`+port+`"`) {
			t.Errorf("GET %s with Host evil.example = %d, want 421 saying why", path, code)
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "scheduler.example.com", "scheduler.example.com:443"} {
		if code, body := get("/", host); code != http.StatusOK || !strings.Contains(body, `<tr data-schedule="yearly"`) {
			t.Errorf("GET / with Host %s = %d, want 200 with the schedules", host, code)
		}
	}
	for _, path := range []string{"/metrics", "/healthz"} {
		if code, _ := get(path, "evil.example:"+port); code != http.StatusOK {
			t.Errorf("GET %s with Host evil.example = %d, want 200: the scrapers' paths do not check the Host", path, code)
		}
	}
	d.waitLog(`msg="dashboard request refused: unknown host" component=dashboard remote_addr=127.0.0.1 path=/ host=evil.example:` + port)
}

// TestDashboardNeedsLoginBeyondLoopback: a dashboard without a login does
// not listen beyond the loopback interface, by the config or by -http.
func TestDashboardNeedsLoginBeyondLoopback(t *testing.T) {
	t.Parallel()
	dir := setup(t, strings.Replace(metricsConfig, `listen = "127.0.0.1:0"`, `listen = "0.0.0.0:0"`, 1))
	_, errs, code := cli(t, dir, "-check")
	if code != 2 || !strings.Contains(errs, "schedules.toml:3: http: field listen: the dashboard listens beyond the loopback interface and asks for no login") {
		t.Errorf("-check with listen = 0.0.0.0:0 and no login: exit %d, stderr:\n%s", code, errs)
	}
	dir = setup(t, strings.Replace(metricsConfig, `listen = "127.0.0.1:0"`, ``, 1))
	_, errs, code = cli(t, dir, "-http", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errs, "-http 0.0.0.0:0: the dashboard listens beyond the loopback interface and asks for no login") {
		t.Errorf("-http 0.0.0.0:0 without a login: exit %d, stderr:\n%s", code, errs)
	}
}
