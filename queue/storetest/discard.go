package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// deadJobs enqueues a job of type t per key, of schedule sched, and makes
// each dead; it returns their ids in key order.
func deadJobs(t *testing.T, q store.Engine, now time.Time, sched string, keys ...string) []int64 {
	t.Helper()
	return deadJobsOf(t, q, "t", now, sched, keys...)
}

// deadJobsOf is deadJobs of type typ.
func deadJobsOf(t *testing.T, q store.Engine, typ string, now time.Time, sched string, keys ...string) []int64 {
	t.Helper()
	var ids []int64
	for _, k := range keys {
		ids = append(ids, mustEnqueue(t, q, store.NewJob{Type: typ, Key: k, MaxAttempts: 1, Schedule: sched}).ID)
		finishJob(t, q, now, k, store.OutcomeDead, "boom "+k)
	}
	return ids
}

// testDiscardEndsDeadJobs: Discard ends the dead jobs it names as
// discarded, with who and when, keeps their error, counts them apart from
// dead ones, and leaves a job in any other state as it is, saying its
// state; no dead-job read sees them, and the purge keeps them.
func testDiscardEndsDeadJobs(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	ids := deadJobs(t, q, clk.Now(), "s", "a", "b")
	pending := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "p", RunAt: t0.Add(time.Hour)}).ID
	clk.Advance(time.Minute)
	got, err := q.Discard(ctx, store.Discard{IDs: []int64{pending, ids[0], 1 << 40}, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	want := store.Discarded{IDs: []int64{ids[0]}, Refused: []store.RefusedJob{{ID: pending, State: store.StatePending}, {ID: 1 << 40}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Discard = %+v, want %+v", got, want)
	}
	j := mustJob(t, q, "a")
	if j.State != store.StateDiscarded || j.DiscardedBy != "alice" || !j.DiscardedAt.Equal(clk.Now()) || j.LastError != "boom a" || !j.FinishedAt.Equal(t0) {
		t.Errorf("discarded job = %s by %q at %v, error %q, finished %v; want discarded by alice at %v, its error and finish kept",
			j.State, j.DiscardedBy, j.DiscardedAt, j.LastError, j.FinishedAt, clk.Now())
	}
	if j := mustJob(t, q, "p"); j.State != store.StatePending || !j.DiscardedAt.IsZero() {
		t.Errorf("pending job after a refused discard: %s, discarded at %v", j.State, j.DiscardedAt)
	}
	checkCounts(t, q, "discard")
	st, err := q.Stats(ctx)
	if err != nil || st.Dead != 1 || st.Total[store.StateDiscarded] != 1 {
		t.Errorf("Stats = dead %d, totals %v, %v; want 1 dead, 1 discarded", st.Dead, st.Total, err)
	}
	if dead, err := q.Dead(ctx, 10); err != nil || len(dead) != 1 || dead[0].Key != "b" {
		t.Errorf("Dead = %d jobs, %v; want b alone", len(dead), err)
	}
	if dead, err := q.DeadJobs(ctx, t0.Add(-time.Hour), 10); err != nil || len(dead) != 1 || dead[0].Key != "b" {
		t.Errorf("DeadJobs = %d jobs, %v; want b alone", len(dead), err)
	}
	// A discarded job still ended when it went dead.
	if _, err := q.Discard(ctx, store.Discard{IDs: ids[1:], By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if fs, err := q.Finishes(ctx, []string{"s"}); err != nil || !fs["s"].LastCompletion.Equal(t0) || !fs["s"].LastSuccess.IsZero() {
		t.Errorf("Finishes = %+v, %v; want the last completion at %v", fs, err, t0)
	}
	listed, err := q.List(ctx, store.Filter{State: store.StateDiscarded})
	if err != nil || len(listed) != 2 || listed[1].ID != ids[0] || listed[1].DiscardedBy != "alice" {
		t.Errorf("List(discarded) = %d jobs, %v; want b and a", len(listed), err)
	}
	// A second discard of the same job changes nothing and says so.
	if got, err := q.Discard(ctx, store.Discard{IDs: []int64{ids[0]}, By: "bob"}); err != nil || len(got.IDs) != 0 ||
		!reflect.DeepEqual(got.Refused, []store.RefusedJob{{ID: ids[0], State: store.StateDiscarded}}) {
		t.Errorf("second Discard = %+v, %v; want refused as discarded", got, err)
	}
	if j := mustJob(t, q, "a"); j.DiscardedBy != "alice" {
		t.Errorf("second Discard rewrote the record: by %q", j.DiscardedBy)
	}
	clk.Advance(30 * 24 * time.Hour)
	if _, _, err := purge(ctx, q, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, q, "a"); j.State != store.StateDiscarded {
		t.Errorf("after a purge of everything finished: %s, want the discarded job kept", j.State)
	}
}

// testDiscardAllOfASchedule: Discard without ids ends every dead job, or a
// schedule's, and nothing else; with none dead it does nothing.
func testDiscardAllOfASchedule(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	s1 := deadJobs(t, q, clk.Now(), "s1", "a", "b")
	s2 := deadJobs(t, q, clk.Now(), "s2", "c")
	other := deadJobs(t, q, clk.Now(), "", "d")
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "p", Schedule: "s1", RunAt: t0.Add(time.Hour)})
	got, err := q.Discard(ctx, store.Discard{Schedule: "s1", By: "op"})
	if err != nil || !slices.Equal(got.IDs, s1) || len(got.Refused) != 0 {
		t.Fatalf("Discard of s1 = %+v, %v; want %v", got, err, s1)
	}
	if j := mustJob(t, q, "c"); j.State != store.StateDead {
		t.Errorf("job of s2: %s, want dead", j.State)
	}
	if got, err := q.Discard(ctx, store.Discard{Schedule: "s1", By: "op"}); err != nil || len(got.IDs) != 0 {
		t.Errorf("Discard of s1 again = %+v, %v; want nothing", got, err)
	}
	got, err = q.Discard(ctx, store.Discard{By: "op"})
	if want := append(s2, other...); err != nil || !slices.Equal(got.IDs, want) {
		t.Errorf("Discard of all = %+v, %v; want %v", got, err, want)
	}
	if j := mustJob(t, q, "p"); j.State != store.StatePending {
		t.Errorf("pending job: %s", j.State)
	}
	checkCounts(t, q, "discard all")
	if got, err := q.Discard(ctx, store.Discard{IDs: []int64{}, By: "op"}); err != nil || len(got.IDs)+len(got.Refused) != 0 {
		t.Errorf("Discard of no ids = %+v, %v; want nothing", got, err)
	}
	if _, err := q.Discard(ctx, store.Discard{IDs: make([]int64, store.MaxList+1)}); err == nil {
		t.Error("Discard of too many ids succeeded")
	}
}

// testRetryTakesBackADiscard: Retry by id revives a discarded job as it
// does a dead one and clears the record of the discard; RetryAllDead
// leaves discarded jobs alone.
func testRetryTakesBackADiscard(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	ids := deadJobs(t, q, clk.Now(), "s", "a", "b")
	if _, err := q.Discard(ctx, store.Discard{IDs: ids, By: "op"}); err != nil {
		t.Fatal(err)
	}
	if n, err := q.RetryAllDead(ctx); n != 0 || err != nil {
		t.Errorf("RetryAllDead = %d, %v; want discarded jobs left alone", n, err)
	}
	clk.Advance(time.Hour)
	if err := q.Retry(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	j := mustJob(t, q, "a")
	if j.State != store.StatePending || j.DiscardedBy != "" || !j.DiscardedAt.IsZero() || !j.RetriedAt.Equal(clk.Now()) || j.MaxAttempts-j.Attempt != 1 {
		t.Errorf("retried: %s, discarded by %q at %v, retried at %v, %d attempts left; want pending with 1, no discard",
			j.State, j.DiscardedBy, j.DiscardedAt, j.RetriedAt, j.MaxAttempts-j.Attempt)
	}
	if err := q.Retry(ctx, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Retry of a pending job = %v, want ErrNotFound", err)
	}
	if err := q.Retry(ctx, 1<<40); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Retry of no job = %v, want ErrNotFound", err)
	}
	checkCounts(t, q, "retry of a discarded job")
}

// testDiscardRacesRetry: a discard and a retry of the same dead jobs, from
// two stores at once, act one after the other. RetryAllDead against a
// discard of all: each job ends exactly one way. Retry by id against a
// discard by id: either the retry comes first and the discard is refused
// with the job's state, or the discard comes first and the retry takes it
// back. The counts stay exact.
func testDiscardRacesRetry(t *testing.T, su *suite) {
	t.Parallel()
	a, b, clk := su.openTwo(t)
	ctx := context.Background()
	const n = 20
	var keys []string
	for i := range n {
		keys = append(keys, fmt.Sprintf("all-%02d", i))
	}
	ids := deadJobs(t, a, clk.Now(), "s", keys...)
	var retried int64
	var discarded store.Discarded
	var errRetry, errDiscard error
	var wg sync.WaitGroup
	wg.Go(func() { retried, errRetry = a.RetryAllDead(ctx) })
	wg.Go(func() { discarded, errDiscard = b.Discard(ctx, store.Discard{By: "op"}) })
	wg.Wait()
	if errRetry != nil || errDiscard != nil {
		t.Fatalf("RetryAllDead: %v; Discard: %v", errRetry, errDiscard)
	}
	if retried+int64(len(discarded.IDs)) != n || (retried != 0 && len(discarded.IDs) != 0) {
		t.Errorf("retried %d and discarded %d of %d dead jobs; want all by one of them", retried, len(discarded.IDs), n)
	}
	for _, id := range ids {
		j, err := a.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if want := slices.Contains(discarded.IDs, id); (j.State == store.StateDiscarded) != want || (j.State != store.StatePending && !want) {
			t.Errorf("job %d: %s; discarded: %v", id, j.State, want)
		}
	}
	checkCounts(t, a, "retry all racing discard all")

	for round := range 10 {
		key := fmt.Sprintf("one-%02d", round)
		id := deadJobsOf(t, a, "r", clk.Now(), "s", key)[0]
		var d store.Discarded
		wg.Go(func() { errRetry = a.Retry(ctx, id) })
		wg.Go(func() { d, errDiscard = b.Discard(ctx, store.Discard{IDs: []int64{id}, By: "op"}) })
		wg.Wait()
		if errRetry != nil || errDiscard != nil {
			t.Fatalf("round %d: Retry: %v; Discard: %v", round, errRetry, errDiscard)
		}
		refusedPending := reflect.DeepEqual(d, store.Discarded{Refused: []store.RefusedJob{{ID: id, State: store.StatePending}}})
		if !refusedPending && !reflect.DeepEqual(d.IDs, []int64{id}) {
			t.Errorf("round %d: Discard = %+v; want the job discarded, or refused as pending", round, d)
		}
		if j := mustJob(t, a, key); j.State != store.StatePending || j.DiscardedBy != "" {
			t.Errorf("round %d: %s, discarded by %q; want pending, the retry last", round, j.State, j.DiscardedBy)
		}
		finishJob(t, a, clk.Now(), key, store.OutcomeDone, "")
	}
	checkCounts(t, a, "retry racing discard")
}

// testListByPayloadText: PayloadContains keeps the jobs whose payload holds
// the text, byte for byte, with the other filters, newest first, among the
// newest PayloadScanBound jobs those select.
func testListByPayloadText(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	jobs := []store.NewJob{{Type: "t", Key: "old", Payload: []byte(`{"customer":"acme"}`), Schedule: "s"}}
	for i := range store.PayloadScanBound {
		jobs = append(jobs, store.NewJob{Type: "t", Key: fmt.Sprintf("filler-%05d", i), Schedule: "other"})
	}
	jobs = append(jobs,
		store.NewJob{Type: "t", Key: "a", Payload: []byte(`{"customer":"acme","n":1}`), Schedule: "s"},
		store.NewJob{Type: "u", Key: "b", Payload: []byte(`{"customer":"ACME"}`), Schedule: "s"},
		store.NewJob{Type: "t", Key: "c", Payload: []byte(`{"customer":"acme-2"}`), Schedule: "s2"})
	res, err := q.EnqueueBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	id := map[string]int64{}
	for i, r := range res {
		id[jobs[i].Key] = r.ID
	}
	keys := func(f store.Filter) []string {
		t.Helper()
		js, err := q.List(ctx, f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		var out []string
		for _, j := range js {
			out = append(out, j.Key)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    store.Filter
		want []string
	}{
		{"text", store.Filter{PayloadContains: `"acme`}, []string{"c", "a"}},
		{"bytes, not case", store.Filter{PayloadContains: "ACME"}, []string{"b"}},
		{"with a schedule", store.Filter{PayloadContains: "acme", Schedule: "s"}, []string{"a", "old"}},
		{"with a type", store.Filter{PayloadContains: "customer", Type: "u"}, []string{"b"}},
		{"with a key", store.Filter{PayloadContains: "acme", KeyPrefix: "c"}, []string{"c"}},
		{"with a limit", store.Filter{PayloadContains: "acme", Limit: 1}, []string{"c"}},
		{"below an id", store.Filter{PayloadContains: "acme", BeforeID: id["c"]}, []string{"a"}},
		{"past the bound", store.Filter{PayloadContains: "acme", BeforeID: id["a"]}, nil},
		{"wildcards are text", store.Filter{PayloadContains: "%"}, nil},
	} {
		if got := keys(tc.f); !slices.Equal(got, tc.want) {
			t.Errorf("%s: List(%+v) = %v, want %v", tc.name, tc.f, got, tc.want)
		}
	}
}
