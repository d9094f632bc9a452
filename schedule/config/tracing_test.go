package config

import (
	"log/slog"
	"strings"
	"testing"
)

func TestLoadTracing(t *testing.T) {
	t.Parallel()
	on := Tracing{Endpoint: "https://otel.example:4318/v1/traces", ServiceName: "nightly", SampleRatio: 0.25,
		Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	tests := []struct {
		name  string
		table string
		want  Tracing
		err   string // a substring of the only error, with its line
	}{
		{"absent", ``, Tracing{ServiceName: DefaultServiceName, SampleRatio: 1}, ""},
		{"endpoint only", "[tracing]\nendpoint = \"http://127.0.0.1:4318/v1/traces\"\n",
			Tracing{Endpoint: "http://127.0.0.1:4318/v1/traces", ServiceName: DefaultServiceName, SampleRatio: 1}, ""},
		{"every key", "[tracing]\nendpoint = \"https://otel.example:4318/v1/traces\"\nservice_name = \"nightly\"\n" +
			"sample_ratio = 0.25\nheaders = { Authorization = \"Bearer s3cret\" }\n", on, ""},
		{"integer ratio", "[tracing]\nendpoint = \"http://c/v1/traces\"\nsample_ratio = 0\n",
			Tracing{Endpoint: "http://c/v1/traces", ServiceName: DefaultServiceName}, ""},
		{"no endpoint", "[tracing]\nservice_name = \"x\"\n", Tracing{}, `:10: tracing: field endpoint: endpoint is missing`},
		{"bad scheme", "[tracing]\nendpoint = \"grpc://c:4317\"\n", Tracing{}, `:11: tracing: field endpoint: url grpc://c:4317: scheme must be http or https`},
		{"ratio above 1", "[tracing]\nendpoint = \"http://c\"\nsample_ratio = 1.5\n", Tracing{}, `:12: tracing: field sample_ratio: sample ratio 1.5 is not from 0 to 1`},
		{"ratio not a number", "[tracing]\nendpoint = \"http://c\"\nsample_ratio = \"all\"\n", Tracing{}, `:12: tracing: field sample_ratio: wrong type: want a number, got a string`},
		{"bad header", "[tracing]\nendpoint = \"http://c\"\nheaders = { \"a b\" = \"s3cret\" }\n", Tracing{}, `:12: tracing: field headers: header "a b": the name must be an HTTP token`},
		{"empty service name", "[tracing]\nendpoint = \"http://c\"\nservice_name = \" \"\n", Tracing{}, `:12: tracing: field service_name: service name " "`},
		{"unknown key", "[tracing]\nendpoint = \"http://c\"\nurl = \"http://c\"\n", Tracing{}, `:12: tracing: unknown key "url"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse("s.toml", []byte(httpBase+"\n"+tt.table))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), "s.toml"+tt.err) {
					t.Fatalf("Parse = %v, want an error containing %q", err, "s.toml"+tt.err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("error %q shows a header's value", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !cfg.Tracing.Equal(tt.want) {
				t.Errorf("Tracing = %+v, want %+v", cfg.Tracing, tt.want)
			}
		})
	}
}

func TestTracingLogValueMasksSecrets(t *testing.T) {
	t.Parallel()
	tr := Tracing{Endpoint: "https://u:pw@otel.example/v1/traces?key=k3y", ServiceName: "s", SampleRatio: 1,
		Headers: map[string]string{"Authorization": "Bearer s3cret"}}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("x", "tracing", tr)
	for _, secret := range []string{"s3cret", "pw", "k3y"} {
		if strings.Contains(b.String(), secret) {
			t.Errorf("log line %q shows %q", b.String(), secret)
		}
	}
	if !strings.Contains(b.String(), "Authorization") || !strings.Contains(b.String(), "otel.example") {
		t.Errorf("log line %q does not name the endpoint and the header", b.String())
	}
}
