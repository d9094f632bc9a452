package chaos

import (
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP traces endpoint that keeps what it gets.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    map[string]*tracepb.Span // by hex span id
	services map[string]bool          // the resources' service.name
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	r := &otlpReceiver{spans: map[string]*tracepb.Span{}, services: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var msg collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &msg)
		}
		if err != nil || req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("export %s %s: %v", req.URL.Path, req.Header.Get("Content-Type"), err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, rs := range msg.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					r.services[kv.Value.GetStringValue()] = true
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans[hex.EncodeToString(s.SpanId)] = s
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return r, srv.URL
}

func (r *otlpReceiver) span(id string) *tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.spans[id]
}

func attrs(s *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// TestTracing runs a daemon with [tracing] against an in-process OTLP/HTTP
// receiver, an HTTP task against a local server and a command that writes
// $TRACEPARENT: each attempt is a span with the job's attributes, the child
// of its tick's span, and the server and the command see the attempt's
// trace context.
func TestTracing(t *testing.T) {
	t.Parallel()
	rec, otlp := newOTLPReceiver(t)
	hooks := make(chan string, 100)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hooks <- r.Header.Get("Traceparent"):
		default:
		}
	}))
	t.Cleanup(hook.Close)
	s := newSite(t, strings.NewReplacer("{{OTLP}}", otlp, "{{HOOK}}", hook.URL).Replace(`
[tasks.hook]
url = "{{HOOK}}/report"

[tasks.cmd]
command = ["sh", "-c", "printf '%s\n' \"$TRACEPARENT\" >> {{DIR}}/traceparent.log"]

[[schedule]]
name = "web"
cron = "@every 1s"
task = "hook"

[[schedule]]
name = "script"
cron = "@every 1s"
task = "cmd"

[tracing]
endpoint = "{{OTLP}}/v1/traces"
service_name = "chaos-tracing"
headers = { Authorization = "Bearer s3cret" }
`))
	d := s.start()
	var fromServer string
	select {
	case fromServer = <-hooks:
	case <-time.After(deadline): // failure deadline, not a sync point
		t.Fatalf("the HTTP task never called\n%s", d.tail(20))
	}
	var fromCommand string
	eventually(t, "the command to run", func() bool {
		b, _ := os.ReadFile(s.path("traceparent.log"))
		fromCommand, _, _ = strings.Cut(string(b), "\n")
		return fromCommand != ""
	})
	if err := d.stop(); err != nil { // exports the spans left
		t.Fatalf("stop: %v\n%s", err, d.tail(20))
	}
	if strings.Contains(d.log(), "s3cret") {
		t.Error("the log shows a tracing header's value")
	}
	if !rec.services["chaos-tracing"] {
		t.Errorf("services %v, want chaos-tracing", rec.services)
	}
	for _, c := range []struct{ schedule, task, traceparent string }{
		{"web", "hook", fromServer},
		{"script", "cmd", fromCommand},
	} {
		parts := strings.Split(c.traceparent, "-")
		if len(parts) != 4 || parts[0] != "00" || parts[3] != "01" {
			t.Errorf("%s saw traceparent %q, want a sampled W3C traceparent", c.task, c.traceparent)
			continue
		}
		span := rec.span(parts[2])
		if span == nil {
			t.Errorf("%s saw span %s, which was not exported", c.task, parts[2])
			continue
		}
		if got := hex.EncodeToString(span.TraceId); got != parts[1] {
			t.Errorf("%s saw trace %s, its span is in %s", c.task, parts[1], got)
		}
		a := attrs(span)
		if span.Name != "job "+c.task || a["scheduler.schedule"] != c.schedule || a["scheduler.job.type"] != c.task ||
			a["scheduler.outcome"] != "done" || a["scheduler.instant"] == "" || !strings.HasPrefix(a["scheduler.job.key"], c.schedule+"|") {
			t.Errorf("%s's attempt span %q has attributes %v", c.task, span.Name, a)
		}
		if span.Kind != tracepb.Span_SPAN_KIND_CONSUMER {
			t.Errorf("%s's attempt span kind = %v", c.task, span.Kind)
		}
		tick := rec.span(hex.EncodeToString(span.ParentSpanId))
		if tick == nil || tick.Name != "tick "+c.schedule || hex.EncodeToString(tick.TraceId) != parts[1] {
			t.Errorf("%s's attempt span has parent %v, want the tick of %s in its trace", c.task, tick, c.schedule)
		} else if attrs(tick)["scheduler.schedule"] != c.schedule {
			t.Errorf("tick span attributes %v", attrs(tick))
		}
	}
}
