package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"scheduler/clock"
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
