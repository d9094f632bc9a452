package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/scheduler-run/scheduler/queue/store"
)

// testTraceRoundTrips: a job's Trace, given or read from the enqueue's ctx,
// comes back with its claim, by every insert path (one job, a multi-row
// batch, a SkipIfActive row, an advance); a job enqueued outside a trace
// has none.
func testTraceRoundTrips(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	const given = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:     trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		TraceFlags: trace.FlagsSampled,
	})
	const fromCtx = "00-0102030405060708090a0b0c0d0e0f10-0102030405060708-01"
	traced := trace.ContextWithSpanContext(ctx, sc)

	want := map[string]string{}
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "given", Trace: given})
	want["given"] = given
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "none"})
	want["none"] = ""
	if _, err := q.Enqueue(traced, store.NewJob{Type: "t", Key: "ctx"}); err != nil {
		t.Fatal(err)
	}
	want["ctx"] = fromCtx
	var batch []store.NewJob
	for i := range 120 {
		j := store.NewJob{Type: "t", Key: fmt.Sprint("batch", i)}
		if i%2 == 0 {
			j.Trace = given
			want[j.Key] = given
		} else {
			want[j.Key] = fromCtx
		}
		batch = append(batch, j)
	}
	batch = append(batch, store.NewJob{Type: "t", Key: "overlap", Schedule: "s", SkipIfActive: true})
	want["overlap"] = fromCtx
	if _, err := q.EnqueueBatch(traced, batch); err != nil {
		t.Fatal(err)
	}
	now := q.Clock().Now()
	adv := store.Advance{Schedule: "tick", To: now, Jobs: []store.NewJob{
		{Type: "t", Key: "tick|a|1", Schedule: "tick", ScheduledAt: now, Trace: given},
		{Type: "t", Key: "tick|b|1", Schedule: "tick", ScheduledAt: now},
	}}
	if _, err := q.Advance(ctx, adv); err != nil {
		t.Fatal(err)
	}
	want["tick|a|1"], want["tick|b|1"] = given, ""

	got := map[string]string{}
	for _, j := range claim(t, q, "p", now.Add(time.Second), time.Minute, len(want)+1, "t") {
		got[j.Key] = j.Trace
	}
	if len(got) != len(want) {
		t.Fatalf("claimed %d jobs, want %d", len(got), len(want))
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("job %s: Trace = %q, want %q", k, got[k], w)
		}
	}
}
