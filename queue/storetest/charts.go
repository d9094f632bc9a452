package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// chartRun claims the only ready job of typ at claimAt and ends it with
// outcome at endAt (or leaves it running for outcome ""), as a pool would.
func chartRun(t *testing.T, q store.Engine, typ string, claimAt, endAt time.Time, outcome store.Outcome) {
	t.Helper()
	js := claim(t, q, "chart", claimAt, 24*time.Hour, 10, typ)
	if len(js) != 1 {
		t.Fatalf("claim %s at %s: %d jobs, want 1", typ, claimAt, len(js))
	}
	if outcome == "" {
		return
	}
	r := store.Result{Job: js[0], Worker: "chart/w0", Outcome: outcome, Started: claimAt, Finished: endAt}
	res, err := q.CommitPoolTx(context.Background(), store.PoolTx{Owner: "chart", Now: endAt, Results: []store.Result{r}})
	if err != nil || !res.Fenced[0] {
		t.Fatalf("end %s: %+v, %v", typ, res, err)
	}
}

// testActivityAndRunTimings lays jobs across four hours (ended, retried
// into a wait, cancelled while waiting, pending, running, and a schedule's
// instants) and checks every bucket's counts, latencies and depth, and the
// schedule's timings.
func testActivityAndRunTimings(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	enq := func(typ string, due time.Time) int64 {
		return mustEnqueue(t, q, store.NewJob{Key: typ, Type: typ, RunAt: due, MaxAttempts: 1}).ID
	}
	// Before the window: counts nowhere.
	enq("old", h(-2*time.Hour))
	chartRun(t, q, "old", h(-2*time.Hour), h(-time.Hour), store.OutcomeDone)
	enq("a", h(10*time.Minute))
	enq("a2", h(40*time.Minute))
	enq("b", h(20*time.Minute))
	enq("f", h(-time.Hour))
	enq("d", h(90*time.Minute))
	e := enq("e", h(130*time.Minute))
	var cursor time.Time
	sched := func(at time.Time, typeItems ...string) {
		t.Helper()
		var jobs []store.NewJob
		for _, ti := range typeItems {
			jobs = append(jobs, store.NewJob{Key: fmt.Sprintf("s|%s|%d", ti, at.Unix()), Type: ti, Schedule: "s", Item: ti,
				ScheduledAt: at, RunAt: at, MaxAttempts: 1})
		}
		if _, err := q.Advance(ctx, store.Advance{Schedule: "s", From: cursor, To: at, Jobs: jobs}); err != nil {
			t.Fatalf("advance s to %s: %v", at, err)
		}
		cursor = at
	}
	sched(h(30*time.Minute), "c")
	sched(h(3*time.Hour), "x", "y")
	sched(h(210*time.Minute), "p")

	chartRun(t, q, "a", h(10*time.Minute+2*time.Second), h(10*time.Minute+32*time.Second), store.OutcomeDone)
	chartRun(t, q, "a2", h(40*time.Minute+200*time.Millisecond), h(41*time.Minute), store.OutcomeDone)
	chartRun(t, q, "b", h(65*time.Minute), h(66*time.Minute), store.OutcomeDead)
	chartRun(t, q, "c", h(121*time.Minute), h(122*time.Minute), store.OutcomeDone)
	clk.Set(h(170 * time.Minute))
	if err := cancelPending(ctx, q, e); err != nil {
		t.Fatal(err)
	}
	chartRun(t, q, "x", h(185*time.Minute), h(187*time.Minute), store.OutcomeDone)
	chartRun(t, q, "y", h(186*time.Minute), h(200*time.Minute), store.OutcomeDead)
	chartRun(t, q, "f", h(210*time.Minute), time.Time{}, "")
	clk.Set(h(220 * time.Minute))

	got, err := q.Activity(ctx, "", store.Buckets{From: t0, Size: time.Hour, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	want := []store.Activity{
		{Start: h(0), Done: 2, Started: 2, LatencyP50: 200 * ms, LatencyP95: 2 * time.Second, Depth: 3},
		{Start: h(time.Hour), Dead: 1, Started: 1, LatencyP50: 45 * time.Minute, LatencyP95: 45 * time.Minute, Depth: 3},
		{Start: h(2 * time.Hour), Done: 1, Cancelled: 1, Started: 1, LatencyP50: 91 * time.Minute, LatencyP95: 91 * time.Minute, Depth: 2},
		// 5 and 6 minutes share a class: both percentiles are its greatest.
		{Start: h(3 * time.Hour), Done: 1, Dead: 1, Started: 2, LatencyP50: 6 * time.Minute, LatencyP95: 6 * time.Minute, Depth: 2},
	}
	checkActivity(t, "all jobs", got, want)

	got, err = q.Activity(ctx, "s", store.Buckets{From: t0, Size: time.Hour, N: 4})
	if err != nil {
		t.Fatal(err)
	}
	checkActivity(t, "schedule s", got, []store.Activity{{Start: h(0)}, {Start: h(time.Hour)}, {Start: h(2 * time.Hour), Done: 1},
		{Start: h(3 * time.Hour), Done: 1, Dead: 1}})

	rts, err := q.RunTimings(ctx, "s", 2)
	if err != nil {
		t.Fatal(err)
	}
	wantRT := []store.RunTiming{
		{ScheduledAt: h(3 * time.Hour), FirstStart: h(185 * time.Minute), LastFinish: h(200 * time.Minute), Jobs: 2, Dead: 1},
		{ScheduledAt: h(210 * time.Minute), Jobs: 1},
	}
	if g, w := fmt.Sprint(rts), fmt.Sprint(wantRT); g != w {
		t.Errorf("RunTimings(s, 2) = %s, want %s", g, w)
	}
	rts, err = q.RunTimings(ctx, "s", 10)
	if err != nil || len(rts) != 3 || !rts[0].LastFinish.Equal(h(122*time.Minute)) {
		t.Errorf("RunTimings(s, 10) = %v, %v; want 3 instants, the first ended at %s", rts, err, h(122*time.Minute))
	}
	for _, b := range []store.Buckets{{From: t0, Size: time.Hour}, {From: t0, Size: time.Microsecond, N: 1}, {Size: time.Hour, N: 1},
		{From: t0, Size: time.Hour, N: store.MaxBuckets + 1}} {
		if _, err := q.Activity(ctx, "", b); err == nil {
			t.Errorf("Activity(%+v): no error", b)
		}
	}
}

func checkActivity(t *testing.T, what string, got, want []store.Activity) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("Activity of %s: %d buckets, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Start.Equal(w.Start) {
			t.Errorf("Activity of %s: bucket %d starts %s, want %s", what, i, g.Start, w.Start)
		}
		g.Start, w.Start = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("Activity of %s: bucket %d = %+v, want %+v", what, i, g, w)
		}
	}
}

// testActivityFollowsRows reads the same hours again after the jobs
// change under them (a dead job retried, a job finished late into a past
// hour, done jobs purged): each read is what the rows say then, whatever
// an earlier read kept.
func testActivityFollowsRows(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	h := func(d time.Duration) time.Time { return t0.Add(d) }
	ids := map[string]int64{}
	for _, typ := range []string{"a", "b", "c", "late"} {
		ids[typ] = mustEnqueue(t, q, store.NewJob{Key: typ, Type: typ, RunAt: h(0), MaxAttempts: 1}).ID
	}
	// The newest job, which a purge on SQLite keeps.
	mustEnqueue(t, q, store.NewJob{Key: "tail", Type: "tail", RunAt: h(48 * time.Hour), MaxAttempts: 1})
	chartRun(t, q, "a", h(10*time.Minute), h(11*time.Minute), store.OutcomeDone)
	chartRun(t, q, "b", h(70*time.Minute), h(71*time.Minute), store.OutcomeDead)
	chartRun(t, q, "c", h(130*time.Minute), h(131*time.Minute), store.OutcomeDone)
	late := claim(t, q, "chart", h(20*time.Minute), 24*time.Hour, 1, "late")[0]
	clk.Set(h(4 * time.Hour))
	b := store.Buckets{From: t0, Size: time.Hour, N: 4}
	read := func(what string) []store.Activity {
		t.Helper()
		got, err := q.Activity(ctx, "", b)
		if err != nil {
			t.Fatalf("Activity %s: %v", what, err)
		}
		return got
	}
	check := func(what string, done0, dead1, done2, depth1 int) {
		t.Helper()
		got := read(what)
		if got[0].Done != done0 || got[1].Dead != dead1 || got[2].Done != done2 || got[1].Depth != depth1 {
			t.Errorf("Activity %s: done %d, dead %d, done %d in hours 0, 1, 2, depth %d at the end of hour 1; want %d, %d, %d, %d",
				what, got[0].Done, got[1].Dead, got[2].Done, got[1].Depth, done0, dead1, done2, depth1)
		}
	}
	check("first", 1, 1, 1, 1)
	check("again", 1, 1, 1, 1)

	r := store.Result{Job: late, Worker: "chart/w0", Outcome: store.OutcomeDone, Started: h(20 * time.Minute), Finished: h(30 * time.Minute)}
	if res, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "chart", Now: h(4 * time.Hour), Results: []store.Result{r}}); err != nil || !res.Fenced[0] {
		t.Fatalf("end late: %+v, %v", res, err)
	}
	check("after a late finish", 2, 1, 1, 1)

	// A discarded job failed: it still counts as dead.
	if d, err := q.Discard(ctx, store.Discard{IDs: []int64{ids["b"]}, By: "op"}); err != nil || len(d.IDs) != 1 {
		t.Fatalf("Discard = %+v, %v", d, err)
	}
	check("after a discard", 2, 1, 1, 1)
	// And so it does in buckets no kept hour holds.
	if got, err := q.Activity(ctx, "", store.Buckets{From: h(time.Minute), Size: time.Hour, N: 4}); err != nil || got[1].Dead != 1 {
		t.Errorf("Activity in unaligned buckets after a discard = %+v, %v; want 1 dead in the second", got, err)
	}

	if err := q.Retry(ctx, ids["b"]); err != nil {
		t.Fatal(err)
	}
	check("after a retry", 2, 0, 1, 1)

	clk.Set(h(2*time.Hour + 24*time.Hour))
	if _, err := q.Maintain(ctx, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	check("after a purge", 0, 0, 1, 1)
}
