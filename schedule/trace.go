package schedule

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// tracerName names the tracer of the ticks' and triggers' spans.
const tracerName = "github.com/scheduler-run/scheduler/schedule"

// The attributes of a tick's or a trigger's span, beside queue's.
const (
	AttrInstants = attribute.Key("scheduler.instants") // instants the tick runs
	AttrJobs     = attribute.Key("scheduler.jobs")     // jobs it enqueues
)

// traceTick makes the tick that runs runs of s, enqueuing jobs, a span and
// sets it as the jobs' Trace. The span marks the decision at now; the jobs
// commit right after it ends, or not at all when another beat moved the
// cursor first.
func (b *Beat) traceTick(s *config.Schedule, runs []time.Time, jobs []store.NewJob, now time.Time) {
	attrs := []attribute.KeyValue{queue.AttrSchedule.String(s.Name), AttrInstants.Int(len(runs)), AttrJobs.Int(len(jobs))}
	if len(runs) > 0 {
		attrs = append(attrs, queue.AttrInstant.String(runs[len(runs)-1].UTC().Format(time.RFC3339)))
	}
	_, span := b.tracer.Start(context.Background(), "tick "+s.Name,
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithTimestamp(now), trace.WithAttributes(attrs...))
	if sc := span.SpanContext(); sc.IsValid() {
		tp := store.Traceparent(sc)
		for i := range jobs {
			jobs[i].Trace = tp
		}
	}
	span.End(trace.WithTimestamp(now))
}

// startTrigger starts the span of a trigger of the schedule name.
func startTrigger(ctx context.Context, tp trace.TracerProvider, name string, opts TriggerOptions) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{queue.AttrSchedule.String(name)}
	if opts.Item != "" {
		attrs = append(attrs, queue.AttrItem.String(opts.Item))
	}
	return tp.Tracer(tracerName).Start(ctx, "trigger "+name,
		trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
}
