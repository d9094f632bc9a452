package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// testListFiltersNewestFirst: List selects by state, type, schedule and key
// prefix, newest first, below BeforeID, up to its limit.
func testListFiltersNewestFirst(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	for i := range 6 {
		sched := "a"
		if i%2 == 1 {
			sched = "b"
		}
		mustEnqueue(t, q, store.NewJob{Type: fmt.Sprint("t", i%3), Key: fmt.Sprintf("%s|%d", sched, i), Schedule: sched, ScheduledAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	if err := cancelPending(ctx, q, 2); err != nil {
		t.Fatal(err)
	}
	ids := func(f store.Filter) string {
		t.Helper()
		js, err := q.List(ctx, f)
		if err != nil {
			t.Fatalf("List(%+v): %v", f, err)
		}
		var out []int64
		for _, j := range js {
			out = append(out, j.ID)
		}
		return fmt.Sprint(out)
	}
	for _, tc := range []struct {
		name string
		f    store.Filter
		want string
	}{
		{"all", store.Filter{}, "[6 5 4 3 2 1]"},
		{"limit", store.Filter{Limit: 2}, "[6 5]"},
		{"state", store.Filter{State: store.StatePending}, "[6 5 4 3 1]"},
		{"cancelled", store.Filter{State: store.StateCancelled}, "[2]"},
		{"type", store.Filter{Type: "t0"}, "[4 1]"},
		{"schedule", store.Filter{Schedule: "b"}, "[6 4 2]"},
		{"key", store.Filter{KeyPrefix: "a|"}, "[5 3 1]"},
		{"key exact", store.Filter{KeyPrefix: "a|4"}, "[5]"},
		{"combined", store.Filter{Schedule: "b", State: store.StatePending, Type: "t0"}, "[4]"},
		{"before", store.Filter{BeforeID: 4}, "[3 2 1]"},
		{"before with limit", store.Filter{BeforeID: 6, Limit: 2}, "[5 4]"},
		{"before state", store.Filter{State: store.StatePending, BeforeID: 5}, "[4 3 1]"},
		{"before type", store.Filter{Type: "t0", BeforeID: 4}, "[1]"},
		{"before schedule", store.Filter{Schedule: "b", BeforeID: 6}, "[4 2]"},
		{"before key", store.Filter{KeyPrefix: "a|", BeforeID: 5}, "[3 1]"},
		{"before combined", store.Filter{Schedule: "b", State: store.StatePending, BeforeID: 6}, "[4]"},
	} {
		if got := ids(tc.f); got != tc.want {
			t.Errorf("%s: List(%+v) = %s, want %s", tc.name, tc.f, got, tc.want)
		}
	}
	if _, err := q.List(ctx, store.Filter{Limit: store.MaxList + 1}); err == nil {
		t.Error("List with a limit over MaxList: no error")
	}
	if _, err := q.List(ctx, store.Filter{State: "gone"}); err == nil {
		t.Error("List of an unknown state: no error")
	}
}

// testSkipsListedAndSummarised: ListSkips lists newest instant first, of one
// schedule or all; SkipSummary counts a window and finds the newest; SkipAt
// finds an item's skip or the whole schedule's.
func testSkipsListedAndSummarised(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	var skips []store.Skip
	for i := range 5 {
		skips = append(skips, store.Skip{Schedule: "a", ScheduledAt: t0.Add(-time.Duration(i) * 12 * time.Hour), Reason: store.SkipMisfire})
	}
	skips = append(skips, store.Skip{Schedule: "b", Item: "x=1", ScheduledAt: t0.Add(-time.Hour), Reason: store.SkipOverlap})
	if _, err := q.Advance(ctx, store.Advance{Schedule: "a", To: t0, Skips: skips}); err != nil {
		t.Fatal(err)
	}
	all, err := q.ListSkips(ctx, "", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 || all[0].Schedule != "a" || !all[0].ScheduledAt.Equal(t0) || all[1].Schedule != "b" || all[1].Item != "x=1" {
		t.Errorf("ListSkips(all, 3) = %+v", all)
	}
	of, err := q.ListSkips(ctx, "b", 10)
	if err != nil || len(of) != 1 || of[0].Reason != store.SkipOverlap {
		t.Errorf("ListSkips(b) = %+v, %v", of, err)
	}
	sum, err := q.SkipSummary(ctx, "a", t0.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Count != 2 || sum.Last == nil || !sum.Last.ScheduledAt.Equal(t0) {
		t.Errorf("store.SkipSummary(a, last day) = %+v, want 2 with the last at %v", sum, t0)
	}
	if sum, _ := q.SkipSummary(ctx, "none", t0); sum.Count != 0 || sum.Last != nil {
		t.Errorf("store.SkipSummary(none) = %+v", sum)
	}
	if s, err := q.SkipAt(ctx, "a", "x=9", t0); err != nil || s.Reason != store.SkipMisfire {
		t.Errorf("SkipAt(a, item of a whole-schedule skip) = %+v, %v", s, err)
	}
	if s, err := q.SkipAt(ctx, "b", "x=1", t0.Add(-time.Hour)); err != nil || s.Reason != store.SkipOverlap {
		t.Errorf("SkipAt(b x=1) = %+v, %v", s, err)
	}
	if _, err := q.SkipAt(ctx, "b", "x=2", t0.Add(-time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SkipAt(b, another item) = %v, want store.ErrNotFound", err)
	}
}

// testInstantSummarisesFanOut: Instant counts the jobs of one instant by
// state, not the schedule's other instants.
func testInstantSummarisesFanOut(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	for i, item := range []string{"x", "y", "z"} {
		mustEnqueue(t, q, store.NewJob{Type: "t", Key: "s|" + item, Schedule: "s", Item: item, ScheduledAt: t0})
		mustEnqueue(t, q, store.NewJob{Type: "t", Key: fmt.Sprint("s|old", i), Schedule: "s", Item: item, ScheduledAt: t0.Add(-time.Hour)})
	}
	if err := cancelPending(ctx, q, mustJob(t, q, "s|y").ID); err != nil {
		t.Fatal(err)
	}
	o, err := q.Instant(ctx, "s", t0)
	if err != nil {
		t.Fatal(err)
	}
	if o.Jobs != 3 || o.States[store.StatePending] != 2 || o.States[store.StateCancelled] != 1 {
		t.Errorf("Instant = %+v, want 3 jobs: 2 pending, 1 cancelled", o)
	}
	// Two manual runs of two items each; the newest is summed alone.
	var last store.Enqueued
	for _, k := range []string{"k1", "k2"} {
		for _, item := range []string{"x", "y"} {
			last = mustEnqueue(t, q, store.NewJob{Type: "t", Key: "s|" + item + "|manual|" + k, Schedule: "s", Item: item})
		}
	}
	if err := cancelPending(ctx, q, last.ID); err != nil {
		t.Fatal(err)
	}
	if o, err := q.ManualRun(ctx, "s", last.ID, 2, "|manual|k2"); err != nil || o.Jobs != 2 || o.States[store.StatePending] != 1 || o.States[store.StateCancelled] != 1 {
		t.Errorf("Run = %+v, %v; want 2 jobs: 1 pending, 1 cancelled", o, err)
	}
}

// testListsAndRuns: a batch's ids follow the order of its jobs; LastRuns
// takes a schedule's latest instant, or its newest manual run when it has
// no instant's job; LastManualRuns its newest manual run; ScheduleJobs
// lists newest instant first, manual runs last, newest first; List's key
// prefix is no pattern; its limit defaults to 50 and is bounded by MaxList.
func testListsAndRuns(t *testing.T, su *suite) {
	t.Parallel()
	s, _ := su.open(t)
	ctx := context.Background()
	jobs := []store.NewJob{
		{Key: "a|x|1", Type: "t1", Schedule: "a", Item: "x", ScheduledAt: t0},
		{Key: "a|x|2", Type: "t1", Schedule: "a", Item: "x", ScheduledAt: t0.Add(time.Hour)},
		{Key: "a|x|manual|k", Type: "t2", Schedule: "a", Item: "x"},
		{Key: "a|y|manual|k", Type: "t2", Schedule: "a", Item: "y"},
		{Key: "b|manual|k", Type: "t2", Schedule: "b"},
		{Key: "z%_", Type: "t3"},
		{Key: "z%", Type: "t3"},
		{Key: "zz", Type: "t3"},
	}
	res, err := s.EnqueueBatch(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(res); i++ {
		if res[i].ID <= res[i-1].ID {
			t.Fatalf("ids %+v: want them in the order of the jobs", res)
		}
	}
	keys := func(js []*store.Job) string {
		var out []string
		for _, j := range js {
			out = append(out, j.Key)
		}
		return strings.Join(out, " ")
	}
	bySchedule := func(m map[string]*store.Job) string {
		return keys([]*store.Job{m["a"], m["b"]})
	}
	if last, err := s.LastRuns(ctx); err != nil || len(last) != 2 || last["a"] == nil || last["b"] == nil || bySchedule(last) != "a|x|2 b|manual|k" {
		t.Fatalf("LastRuns = %+v, %v; want a|x|2 and b|manual|k", last, err)
	}
	if man, err := s.LastManualRuns(ctx); err != nil || len(man) != 2 || man["a"] == nil || man["b"] == nil || bySchedule(man) != "a|y|manual|k b|manual|k" {
		t.Fatalf("LastManualRuns = %+v, %v; want a|y|manual|k and b|manual|k", man, err)
	}
	if sj, err := s.ScheduleJobs(ctx, "a", 10); err != nil || keys(sj) != "a|x|2 a|x|1 a|y|manual|k a|x|manual|k" {
		t.Fatalf("ScheduleJobs = %s, %v", keys(sj), err)
	}
	if sj, err := s.ScheduleJobs(ctx, "a", 1); err != nil || keys(sj) != "a|x|2" {
		t.Fatalf("ScheduleJobs(1) = %s, %v", keys(sj), err)
	}
	for _, tc := range []struct {
		f    store.Filter
		want string
	}{
		{store.Filter{KeyPrefix: "a|x|"}, "a|x|manual|k a|x|2 a|x|1"},
		{store.Filter{KeyPrefix: "z%"}, "z% z%_"},
		{store.Filter{KeyPrefix: "z_"}, ""},
		{store.Filter{Type: "t2", Schedule: "a"}, "a|y|manual|k a|x|manual|k"},
		{store.Filter{State: store.StatePending, Type: "t1", Limit: 1}, "a|x|2"},
		{store.Filter{State: store.StateDone}, ""},
	} {
		js, err := s.List(ctx, tc.f)
		if err != nil || keys(js) != tc.want {
			t.Errorf("List(%+v) = %s, %v; want %s", tc.f, keys(js), err, tc.want)
		}
	}
	if _, err := s.List(ctx, store.Filter{State: "nope"}); err == nil {
		t.Error("List of an unknown state: no error")
	}
	for _, limit := range []int{-1, store.MaxList + 1} {
		if _, err := s.List(ctx, store.Filter{Limit: limit}); err == nil {
			t.Errorf("List with limit %d: no error", limit)
		}
	}
	more := make([]store.NewJob, 60)
	for i := range more {
		more[i] = store.NewJob{Type: "m"}
	}
	if _, err := s.EnqueueBatch(ctx, more); err != nil {
		t.Fatal(err)
	}
	if js, err := s.List(ctx, store.Filter{}); err != nil || len(js) != 50 {
		t.Errorf("List without a limit: %d jobs, %v; want 50", len(js), err)
	}
	if js, err := s.List(ctx, store.Filter{Limit: store.MaxList}); err != nil || len(js) != len(jobs)+len(more) {
		t.Errorf("List up to MaxList: %d jobs, %v; want %d", len(js), err, len(jobs)+len(more))
	}
}

// testRunCountsTheNewestOfTheRun: Run counts the newest span jobs of the
// schedule that stand for no instant, with an id up to lastID and a key
// ending with the suffix, wherever other jobs drew ids between theirs.
func testRunCountsTheNewestOfTheRun(t *testing.T, su *suite) {
	t.Parallel()
	s, _ := su.open(t)
	ctx := context.Background()
	manual := func(sched, item, suffix string) store.Enqueued {
		return mustEnqueue(t, s, store.NewJob{Type: "t", Key: sched + "|" + item + suffix, Schedule: sched, Item: item})
	}
	manual("s", "old", "|manual|k1") // an item the schedule had before
	x := manual("s", "x", "|manual|k1")
	// Jobs that draw ids among the run's: another schedule's run with the
	// same suffix, another run of s, an instant of s with a key ending
	// alike, a one-off job.
	manual("other", "x", "|manual|k1")
	manual("s", "x", "|manual|k0")
	mustEnqueue(t, s, store.NewJob{Type: "t", Key: "s|y|at|manual|k1", Schedule: "s", Item: "y", ScheduledAt: t0})
	manual("s", "y", "|manual|k1")
	mustEnqueue(t, s, store.NewJob{Type: "t", Key: "one-off"})
	z := manual("s", "z", "|manual|k1")
	manual("s", "later", "|manual|k1") // after lastID
	if err := cancelPending(ctx, s, x.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		span, jobs, cancelled int
	}{{3, 3, 1}, {2, 2, 0}, {4, 4, 1}, {10, 4, 1}} {
		o, err := s.ManualRun(ctx, "s", z.ID, c.span, "|manual|k1")
		if err != nil || o.Schedule != "s" || o.Jobs != c.jobs || o.States[store.StateCancelled] != c.cancelled || o.States[store.StatePending] != c.jobs-c.cancelled {
			t.Errorf("Run(span %d) = %+v, %v; want %d jobs, %d cancelled", c.span, o, err, c.jobs, c.cancelled)
		}
	}
	if _, err := s.ManualRun(ctx, "s", z.ID, 3, ""); err == nil {
		t.Error("Run with an empty suffix: no error")
	}
}
