package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// testFinishesAndReadySince checks what a scrape of the metrics reads: a
// schedule's newest success and completion, and each type's oldest ready job.
func testFinishesAndReadySince(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, q, store.NewJob{Type: "a", Key: "a1", Schedule: "s", ScheduledAt: t0})
	mustEnqueue(t, q, store.NewJob{Type: "b", Key: "b1", Schedule: "s", ScheduledAt: t0.Add(time.Second)})
	mustEnqueue(t, q, store.NewJob{Type: "c", Key: "c1", Schedule: "other", RunAt: t0.Add(-time.Minute)})
	mustEnqueue(t, q, store.NewJob{Type: "a", Key: "later", RunAt: t0.Add(time.Hour)})

	f, err := q.Finishes(ctx, []string{"s", "other", "none"})
	if err != nil || len(f) != 0 {
		t.Fatalf("Finishes before any finish = %v, %v; want none", f, err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.ReadySince; len(got) != 3 || !got["a"].Equal(t0) || !got["b"].Equal(t0) || !got["c"].Equal(t0.Add(-time.Minute)) {
		t.Errorf("ReadySince = %v, want a and b at %v, c at %v", got, t0, t0.Add(-time.Minute))
	}

	done := t0.Add(time.Minute)
	clk.Set(done)
	finishJob(t, q, done, "b1", store.OutcomeDone, "")
	dead := t0.Add(2 * time.Minute)
	clk.Set(dead)
	finishJob(t, q, dead, "c1", store.OutcomeDead, "boom")
	f, err = q.Finishes(ctx, []string{"s", "other", "none"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.Finishes{
		"s":     {LastSuccess: done, LastCompletion: done},
		"other": {LastCompletion: dead},
	}
	if len(f) != len(want) {
		t.Errorf("Finishes = %v, want %v", f, want)
	}
	for name, w := range want {
		if g := f[name]; !g.LastSuccess.Equal(w.LastSuccess) || !g.LastCompletion.Equal(w.LastCompletion) {
			t.Errorf("Finishes[%s] = %+v, want %+v", name, g, w)
		}
	}
	st, err = q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.ReadySince; len(got) != 1 || !got["a"].Equal(t0) {
		t.Errorf("after the finishes ReadySince = %v, want a at %v", got, t0)
	}
}
