package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestPoolTracesEachAttempt: with a TracerProvider, each attempt is a span,
// child of the span that enqueued the job, with the job's attributes and
// outcome; the handler's ctx holds it.
func TestPoolTracesEachAttempt(t *testing.T) {
	t.Parallel()
	q, clk := newTestQueue(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p := newTestPool(t, q, PoolConfig{TracerProvider: tp})
	seen := make(chan string, 2)
	p.Register("t", HandlerFunc(func(ctx context.Context, j *Job) error {
		seen <- Traceparent(ctx)
		if j.Attempt == 1 {
			return errors.New("boom")
		}
		return nil
	}), TypeConfig{Backoff: time.Second})

	// The enqueue inside a program's span carries it to the job.
	ctx, parent := tp.Tracer("test").Start(context.Background(), "program")
	parent.End()
	at := t0.Add(-time.Hour)
	if _, err := q.Enqueue(ctx, NewJob{Type: "t", Key: "k", Schedule: "nightly", Item: "acme", ScheduledAt: at}); err != nil {
		t.Fatal(err)
	}
	runPool(t, p)
	first := waitFor(t, seen)
	advanceUntil(t, clk, 500*time.Millisecond, "job done", func() bool { return mustJob(t, q, "k").State == StateDone })
	second := waitFor(t, seen)
	// Each span ends before its result commits.

	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "job t" {
			spans = append(spans, s)
		}
	}
	if len(spans) != 2 {
		t.Fatalf("%d attempt spans, want 2", len(spans))
	}
	psc := parent.SpanContext()
	for i, s := range spans {
		if s.Parent().SpanID() != psc.SpanID() || s.SpanContext().TraceID() != psc.TraceID() {
			t.Errorf("attempt %d: parent %v in trace %v, want %v in %v", i+1, s.Parent().SpanID(), s.SpanContext().TraceID(), psc.SpanID(), psc.TraceID())
		}
		if s.SpanKind() != trace.SpanKindConsumer {
			t.Errorf("attempt %d: kind %v", i+1, s.SpanKind())
		}
	}
	if got, want := first, spanParent(spans[0]); got != want {
		t.Errorf("first attempt's handler saw %q, want its span %q", got, want)
	}
	if got, want := second, spanParent(spans[1]); got != want {
		t.Errorf("second attempt's handler saw %q, want its span %q", got, want)
	}
	want := []map[attribute.Key]string{
		{AttrOutcome: "retry", AttrError: "boom", AttrAttempt: "1", AttrSchedule: "nightly", AttrItem: "acme", AttrInstant: "2026-03-01T11:00:00Z", AttrKey: "k", AttrType: "t"},
		{AttrOutcome: "done", AttrAttempt: "2"},
	}
	for i, w := range want {
		got := map[attribute.Key]string{}
		for _, kv := range spans[i].Attributes() {
			got[kv.Key] = kv.Value.Emit()
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("attempt %d: %s = %q, want %q", i+1, k, got[k], v)
			}
		}
	}
}

func spanParent(s sdktrace.ReadOnlySpan) string {
	sc := s.SpanContext()
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}
