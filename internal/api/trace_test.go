package api

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestTriggerIsASpan: with a TracerProvider, a trigger through the API is
// a span named for its schedule, as the beat's ticks are.
func TestTriggerIsASpan(t *testing.T) {
	t.Parallel()
	q := openQueue(t, filepath.Join(t.TempDir(), "q.db"), clock.NewFake(now))
	cfg := parseConfig(t)
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	a, err := New(Config{Queue: q, ConfigFunc: func() *config.Config { return cfg }, HTTP: cfg.HTTP, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest("POST", srv.URL+Prefix+"/schedules/nightly/trigger", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+actToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("trigger = %d, want 201", resp.StatusCode)
	}
	var names []string
	for _, s := range spans.Ended() {
		names = append(names, s.Name())
	}
	if len(names) != 1 || names[0] != "trigger nightly" {
		t.Errorf("spans = %q, want [trigger nightly]", names)
	}
}
