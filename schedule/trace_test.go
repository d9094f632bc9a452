package schedule

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/scheduler-run/scheduler/queue/store"
)

// TestTickAndTriggerSpansParentTheirJobs: with a TracerProvider, the tick
// that materialises an instant and a trigger are spans, and each of their
// jobs carries its span as Trace.
func TestTickAndTriggerSpansParentTheirJobs(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cfg := mustParse(t, fanOut)
	r := startBeatWith(t, q, cfg, BeatConfig{Clock: clk, TracerProvider: tp})
	r.advance(time.Hour)
	r.stop()
	if _, err := Trigger(context.Background(), q, cfg, "s", TriggerOptions{Now: clk.Now(), Key: "k", TracerProvider: tp}); err != nil {
		t.Fatal(err)
	}

	spans := map[string]string{} // traceparent by span name
	for _, s := range rec.Ended() {
		spans[s.Name()] = store.Traceparent(s.SpanContext())
	}
	if spans["tick s"] == "" || spans["trigger s"] == "" {
		t.Fatalf("spans = %v, want a tick and a trigger of s", spans)
	}
	res, err := q.Engine().CommitPoolTx(context.Background(), store.PoolTx{Owner: "p", Now: clk.Now(),
		Claim: &store.Claim{Lease: time.Minute, N: 10, Types: []string{"t"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Claimed) != 4 {
		t.Fatalf("claimed %d jobs, want 4", len(res.Claimed))
	}
	for _, j := range res.Claimed {
		want := spans["tick s"]
		if j.ScheduledAt.IsZero() {
			want = spans["trigger s"]
		}
		if j.Trace != want {
			t.Errorf("job %s: Trace = %q, want %q", j.Key, j.Trace, want)
		}
	}
}
