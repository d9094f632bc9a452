package store

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// TraceContext fills the Trace of jobs that have none with the W3C
// traceparent of the span in ctx, if any: a job enqueued inside a trace
// carries it to its attempts. Without a span it does nothing.
func TraceContext(ctx context.Context, jobs []NewJob) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	tp := Traceparent(sc)
	for i := range jobs {
		if jobs[i].Trace == "" {
			jobs[i].Trace = tp
		}
	}
}

// Traceparent returns sc as a W3C traceparent header value (version 00).
func Traceparent(sc trace.SpanContext) string {
	tid, sid := sc.TraceID(), sc.SpanID()
	flags := sc.TraceFlags() & trace.FlagsSampled
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = append(b, tid.String()...)
	b = append(b, '-')
	b = append(b, sid.String()...)
	b = append(b, '-')
	b = append(b, flags.String()...)
	return string(b)
}
