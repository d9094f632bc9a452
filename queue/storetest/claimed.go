package storetest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// testClaimReturnsTheWholeJob: a claimed job carries every column as
// stored, as the job read back by id after the claim, and the
// trace its enqueue gave it; a job with no schedule, instant, alarm or
// trace reads them as empty.
func testClaimReturnsTheWholeJob(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	const tr = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	at := clk.Now().Add(-time.Hour).Truncate(time.Millisecond)
	full := store.NewJob{Key: "full", Type: "t", Payload: json.RawMessage(`{"n":1}`), Priority: 3, RunAt: at,
		MaxAttempts: 7, Schedule: "s", Item: "i", ScheduledAt: at.Add(-time.Minute), AlarmKey: "a|1", Trace: tr}
	mustEnqueue(t, q, full)
	mustEnqueue(t, q, store.NewJob{Key: "bare", Type: "t"})
	clk.Advance(time.Second)
	got := claim(t, q, "p", clk.Now(), time.Minute, 2, "t")
	if len(got) != 2 || got[0].Key != "full" || got[1].Key != "bare" {
		t.Fatalf("claimed %v, want full then bare", got)
	}
	for _, g := range got {
		want, err := q.Job(ctx, g.ID)
		if err != nil {
			t.Fatal(err)
		}
		want.FanInID, want.Trace = g.FanInID, g.Trace // Job reads neither
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("claimed job %s:\n got %s\nwant %s", g.Key, gj, wj)
		}
	}
	if g := got[0]; g.Trace != tr || g.FanInID != 0 || g.Attempt != 1 || g.MaxAttempts != 7 || g.Priority != 3 ||
		g.Schedule != "s" || g.Item != "i" || g.AlarmKey != "a|1" || !g.ScheduledAt.Equal(full.ScheduledAt) ||
		!g.RunAt.Equal(at) || string(g.Payload) != `{"n":1}` || g.Version != 1 || g.Owner != "p" {
		t.Errorf("claimed full job = %+v", g)
	}
	if g := got[1]; g.Trace != "" || g.Schedule != "" || g.AlarmKey != "" || !g.ScheduledAt.IsZero() ||
		!g.RetriedAt.IsZero() || string(g.Payload) != `{}` {
		t.Errorf("claimed bare job = %+v", g)
	}
}
