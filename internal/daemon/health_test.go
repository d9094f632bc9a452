package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule"
)

// TestHealthzNamesTheStuckLoop: /healthz answers 200 while both loops
// answer their probes, and 503 naming the loop that stopped answering one,
// then 503 "stopping" once the daemon stops.
func TestHealthzNamesTheStuckLoop(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	beatStuck := make(chan bool, 1)
	beatStuck <- false
	answered := func() <-chan struct{} {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	beat := func() <-chan struct{} {
		stuck := <-beatStuck
		beatStuck <- stuck
		if stuck {
			return make(chan struct{}) // never answered
		}
		return answered()
	}
	h := newHealth(clk, newLiveness(map[string]func() <-chan struct{}{"pool": answered, "beat": beat}), &writes{})
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); <-done }()
	go func() {
		defer close(done)
		h.run(ctx)
	}()
	look := func() {
		clk.BlockUntil(1)
		clk.Advance(healthEvery)
		clk.BlockUntil(1) // back at its wait: the look is recorded
	}
	serve := func() (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return w.Code, w.Body.String()
	}
	look()
	if code, body := serve(); code != http.StatusOK {
		t.Fatalf("both loops answering: %d %q, want 200", code, body)
	}
	<-beatStuck
	beatStuck <- true
	look() // probes the beat, which does not answer
	look() // finds the probe unanswered
	if code, body := serve(); code != http.StatusServiceUnavailable || !strings.Contains(body, "beat") || strings.Contains(body, "pool") {
		t.Fatalf("beat stuck: %d %q, want 503 naming the beat alone", code, body)
	}
	<-beatStuck
	beatStuck <- false
	look()
	look()
	if code, body := serve(); code != http.StatusOK {
		t.Fatalf("beat answering again: %d %q, want 200", code, body)
	}
	h.stop()
	if code, body := serve(); code != http.StatusServiceUnavailable || !strings.Contains(body, "stopping") {
		t.Fatalf("stopping: %d %q, want 503 stopping", code, body)
	}
}

// TestHealthzReportsConfigsDiffer: while the live daemons run different
// configs /healthz says so, and which rules, in the body of a 200: a
// failing check would get the daemon restarted, which makes its config
// the newest.
func TestHealthzReportsConfigsDiffer(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	h := newHealth(clk, newLiveness(map[string]func() <-chan struct{}{}), &writes{})
	a := schedule.Agreement{Configs: 1, Ruling: "aaa"}
	h.agreement = func() (schedule.Agreement, bool) { return a, true }
	serve := func() (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		return w.Code, w.Body.String()
	}
	if code, body := serve(); code != http.StatusOK || body != "ok\n" {
		t.Errorf("configs agree: %d %q, want 200 ok", code, body)
	}
	at := clk.Now()
	a = schedule.Agreement{Configs: 2, Ruling: "bbbbbbbbbbbbbbbbbbbb", RulingAt: at, Daemons: []schedule.DaemonConfig{
		{Host: "h", PID: 1, Config: "aaaaaaaaaaaaaaaaaaaa", ConfigAt: at.Add(-time.Hour), Self: true},
		{Host: "h", PID: 2, Config: "bbbbbbbbbbbbbbbbbbbb", ConfigAt: at}}}
	code, body := serve()
	if code != http.StatusOK || !strings.HasPrefix(body, "ok\nconfigs differ: the live daemons run 2 different configs") {
		t.Errorf("configs differ: %d %q, want 200 ok and the difference", code, body)
	}
	for _, want := range []string{"sha256 bbbbbbbbbbbb", "this daemon's beat sits out", "pid 1 on h: aaaaaaaaaaaa", "pid 2 on h: bbbbbbbbbbbb"} {
		if !strings.Contains(body, want) {
			t.Errorf("body %q does not say %q", body, want)
		}
	}
}
