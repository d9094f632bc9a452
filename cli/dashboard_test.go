package cli

import (
	"net/http"
	"strings"
	"testing"
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
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") != "default-src 'self'" {
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
