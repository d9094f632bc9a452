package config

import (
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/scheduler-run/scheduler/internal/redact"
)

// Tracing is the [tracing] table: OpenTelemetry traces of the ticks,
// triggers and attempts, sent to an OTLP/HTTP collector. Off unless
// Endpoint is set.
type Tracing struct {
	// Endpoint is the collector's OTLP/HTTP traces URL (key endpoint), such
	// as http://127.0.0.1:4318/v1/traces. Empty, the default, turns
	// tracing off.
	Endpoint string
	// ServiceName is the service.name of the spans' resource (key
	// service_name). Default: DefaultServiceName.
	ServiceName string
	// Headers are sent with each export (key headers), such as an API key.
	// Their values are secrets: never logged or shown (see LogValue).
	Headers map[string]string
	// SampleRatio is the share of ticks and triggers traced, from 0 to 1
	// (key sample_ratio); their jobs' attempts follow their decision.
	// Default: 1.
	SampleRatio float64
}

// DefaultServiceName is the service name of the spans by default.
const DefaultServiceName = "scheduler"

// Enabled reports whether traces are sent.
func (t Tracing) Enabled() bool { return t.Endpoint != "" }

// Equal reports whether t and o configure the same tracing.
func (t Tracing) Equal(o Tracing) bool {
	return t.Endpoint == o.Endpoint && t.ServiceName == o.ServiceName && t.SampleRatio == o.SampleRatio &&
		maps.Equal(t.Headers, o.Headers)
}

// LogValue describes t with the endpoint's secrets and every header value
// masked.
func (t Tracing) LogValue() slog.Value {
	if !t.Enabled() {
		return slog.StringValue("off")
	}
	return slog.GroupValue(slog.String("endpoint", redact.URL(t.Endpoint)), slog.String("service_name", t.ServiceName),
		slog.Float64("sample_ratio", t.SampleRatio), slog.Any("headers", slices.Sorted(maps.Keys(t.Headers))))
}

type rawTracing struct {
	Endpoint    toml.Primitive `toml:"endpoint"`
	ServiceName toml.Primitive `toml:"service_name"`
	Headers     toml.Primitive `toml:"headers"`
	SampleRatio toml.Primitive `toml:"sample_ratio"`
}

func (l *loader) loadTracing(p toml.Primitive, cfg *Config) {
	t := &cfg.Tracing
	*t = Tracing{ServiceName: DefaultServiceName, SampleRatio: 1}
	w := where{table: "tracing", path: []string{"tracing"}}
	var raw rawTracing
	if !l.decode(p, &raw, w) {
		return
	}
	if ew := w.with("endpoint"); l.decode(raw.Endpoint, &t.Endpoint, ew) {
		if err := checkURL(t.Endpoint); err != nil {
			l.add(ew, err)
		}
	} else if present(raw.ServiceName) || present(raw.Headers) || present(raw.SampleRatio) {
		l.errorf(ew, "endpoint is missing: [tracing] needs the collector's OTLP/HTTP traces URL, such as http://127.0.0.1:4318/v1/traces")
	}
	if sw := w.with("service_name"); l.decode(raw.ServiceName, &t.ServiceName, sw) {
		if strings.TrimSpace(t.ServiceName) == "" || len(t.ServiceName) > maxNameLen || strings.ContainsAny(t.ServiceName, "\r\n\x00") {
			l.errorf(sw, "service name %q: use 1 to %d characters on one line", t.ServiceName, maxNameLen)
		}
	}
	if hw := w.with("headers"); l.decode(raw.Headers, &t.Headers, hw) {
		for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
			if !isToken(k) || strings.ContainsAny(t.Headers[k], "\r\n\x00") {
				// The value is a secret: the error names the header only.
				l.errorf(hw, "header %q: the name must be an HTTP token and the value one line", k)
			}
		}
	}
	if rw := w.with("sample_ratio"); l.decode(raw.SampleRatio, &t.SampleRatio, rw) && !(t.SampleRatio >= 0 && t.SampleRatio <= 1) {
		l.errorf(rw, "sample ratio %v is not from 0 to 1", t.SampleRatio)
	}
}
