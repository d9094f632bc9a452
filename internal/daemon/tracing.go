package daemon

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// tracingFlush bounds the export of the last spans at the stop.
const tracingFlush = 5 * time.Second

// newTracerProvider returns the SDK's provider exporting to t's collector
// over OTLP/HTTP, or nil when t is off. The export runs in the background,
// in batches: a slow or absent collector drops spans, never delays a job.
func newTracerProvider(t config.Tracing, version string) (*sdktrace.TracerProvider, error) {
	if !t.Enabled() {
		return nil, nil
	}
	exp, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(t.Endpoint), otlptracehttp.WithHeaders(t.Headers))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", t.ServiceName),
		attribute.String("service.version", version))
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// A tick's or a trigger's decision holds for its jobs' attempts.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.SampleRatio))),
	), nil
}

// stopTracing exports the spans still buffered, within tracingFlush.
func (d *Daemon) stopTracing() {
	if d.tp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlush)
	defer cancel()
	if err := d.tp.Shutdown(ctx); err != nil {
		d.log.Warn("tracing: last spans not exported", "err", err)
	}
}
