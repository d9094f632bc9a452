package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"scheduler/internal/passhash"
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
	for _, want := range []string{`<table id="schedules">`, `<tr data-schedule="yearly">`, `<tr data-schedule="broken">`} {
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
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `<tr data-schedule="yearly">`) || !strings.Contains(body, `<span id="who">ann</span>`) {
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
