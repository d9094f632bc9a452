package tasks

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/scheduler-run/scheduler/queue"
)

// failAfter is how long a test waits for an effect before it fails. It is a
// failure deadline, never a synchronisation point.
const failAfter = 3 * time.Minute

func waitFor[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failAfter):
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}

// Fates of a job, as a handler's error decides them.
const (
	fateDone       = "done"
	fatePermanent  = "permanent"
	fateRetryAfter = "retry after"
	fateRetry      = "retry"
)

// tracedContext returns ctx holding the span of an attempt, with the W3C
// trace context testTraceparent and testTracestate.
func tracedContext(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	ts, err := trace.ParseTraceState(testTracestate)
	if err != nil {
		t.Fatal(err)
	}
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
		TraceState: ts,
	}))
}

const (
	testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	testTracestate  = "vendor=opaque"
)

func fateOf(err error) string {
	var perm *queue.PermanentError
	var retry *queue.RetryError
	switch {
	case err == nil:
		return fateDone
	case errors.As(err, &perm):
		return fatePermanent
	case errors.As(err, &retry):
		return fateRetryAfter
	}
	return fateRetry
}
