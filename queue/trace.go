package queue

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/scheduler-run/scheduler/queue/store"
)

// tracerName names the tracer of the attempts' spans.
const tracerName = "github.com/scheduler-run/scheduler/queue"

// The attributes of an attempt's span.
const (
	AttrJobID    = attribute.Key("scheduler.job.id")
	AttrKey      = attribute.Key("scheduler.job.key")
	AttrType     = attribute.Key("scheduler.job.type")
	AttrAttempt  = attribute.Key("scheduler.job.attempt")
	AttrSchedule = attribute.Key("scheduler.schedule")
	AttrItem     = attribute.Key("scheduler.item")
	AttrInstant  = attribute.Key("scheduler.instant") // RFC 3339, UTC
	AttrOutcome  = attribute.Key("scheduler.outcome")
	AttrError    = attribute.Key("scheduler.error")
)

// traced runs j as execute does, inside the span of its attempt: a child of
// the span that enqueued it (Job.Trace), so that every attempt of a job
// shares its parent. The handler's ctx holds the span.
func (p *Pool) traced(ctx context.Context, worker string, j *Job) store.Result {
	if j.Trace != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": j.Trace})
	}
	ctx, span := p.tracer.Start(ctx, "job "+j.Type,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithTimestamp(p.clock.Now()),
		trace.WithAttributes(attemptAttrs(j)...))
	r := p.redact(p.execute(ctx, worker, j))
	span.SetAttributes(AttrOutcome.String(string(r.Outcome)))
	if r.Error != "" {
		span.SetAttributes(AttrError.String(r.Error))
	}
	switch r.Outcome {
	case OutcomeDone:
		span.SetStatus(codes.Ok, "")
	case OutcomeRetry, OutcomeDead:
		span.SetStatus(codes.Error, r.Error)
	}
	span.End(trace.WithTimestamp(r.Finished))
	return r
}

func attemptAttrs(j *Job) []attribute.KeyValue {
	a := []attribute.KeyValue{
		AttrJobID.Int64(j.ID),
		AttrKey.String(j.Key),
		AttrType.String(j.Type),
		AttrAttempt.Int(j.Attempt),
	}
	if j.Schedule != "" {
		a = append(a, AttrSchedule.String(j.Schedule), AttrItem.String(j.Item))
	}
	if !j.ScheduledAt.IsZero() {
		a = append(a, AttrInstant.String(j.ScheduledAt.UTC().Format(time.RFC3339)))
	}
	return a
}

// Traceparent returns the W3C traceparent of the span in ctx, or "" when
// ctx holds none: what a task hands to the work it starts (an HTTP header,
// an environment variable) so that the work joins the attempt's trace.
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return store.Traceparent(sc)
}

// Tracestate returns the W3C tracestate of the span in ctx, or "".
func Tracestate(ctx context.Context) string {
	return trace.SpanContextFromContext(ctx).TraceState().String()
}
