package dashboard

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestPagesSayTheConfigsDiffer: while the live daemons run different
// configs every page says so at its top, with which rules and what this
// daemon's beat does; while they agree no page does.
func TestPagesSayTheConfigsDiffer(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(now)
	q := openQueue(t, filepath.Join(t.TempDir(), "q.db"), clk)
	cfg := parseConfig(t)
	a := schedule.Agreement{Configs: 1, Ruling: "aaa"}
	h, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, Clock: clk,
		AgreementFunc: func() (schedule.Agreement, bool) { return a, true }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/", "/jobs", "/alarms"} {
		if body := mustGet(t, srv, path); strings.Contains(body, `id="configs"`) {
			t.Errorf("GET %s warns while the configs agree", path)
		}
	}
	a = schedule.Agreement{Configs: 2, Ruling: "bbbbbbbbbbbbbbbb", RulingAt: now, Daemons: []schedule.DaemonConfig{
		{Host: "h", PID: 1, Config: "aaaaaaaaaaaaaaaa", ConfigAt: now.Add(-time.Hour), Self: true},
		{Host: "h", PID: 2, Config: "bbbbbbbbbbbbbbbb", ConfigAt: now}}}
	for _, path := range []string{"/", "/jobs", "/alarms"} {
		body := mustGet(t, srv, path)
		warning := between(t, body, `<p id="configs" role="alert">`, "</p>")
		for _, want := range []string{"2 different configs", "this daemon&#39;s beat sits out", "pid 1 on h: aaaaaaaaaaaa", "pid 2 on h: bbbbbbbbbbbb"} {
			if !strings.Contains(warning, want) {
				t.Errorf("GET %s: the warning %q does not say %q", path, warning, want)
			}
		}
	}
}
