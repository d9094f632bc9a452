package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

func testStatsLookupAndCancel(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	a := mustEnqueue(t, q, store.NewJob{Type: "report", Key: "a", RunAt: t0.Add(-time.Minute)})
	mustEnqueue(t, q, store.NewJob{Type: "report", Key: "b", RunAt: t0.Add(time.Hour)})
	mustEnqueue(t, q, store.NewJob{Type: "ping", Key: "12345"})
	clk.Advance(time.Minute)
	s, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts[store.StatePending]["report"] != 2 || s.Counts[store.StatePending]["ping"] != 1 {
		t.Errorf("counts = %v", s.Counts)
	}
	if s.OldestReady != 2*time.Minute {
		t.Errorf("OldestReady = %v, want 2m", s.OldestReady)
	}
	if j := mustJob(t, q, fmt.Sprint(a.ID)); j.Key != "a" {
		t.Errorf("by id: %s", j.Key)
	}
	if j := mustJob(t, q, "12345"); j.Type != "ping" {
		t.Errorf("a numeric key that is no id: %s", j.Key)
	}
	if _, err := jobByRef(ctx, q, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing job: %v", err)
	}
	if err := cancelPending(ctx, q, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := cancelPending(ctx, q, a.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second cancel: %v", err)
	}
	if j := mustJob(t, q, "a"); j.State != store.StateCancelled {
		t.Errorf("state %s, want cancelled", j.State)
	}
}

func testPing(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	if err := q.Ping(ctx); err != nil {
		t.Fatalf("Ping on an empty queue: %v", err)
	}
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k"})
	if err := q.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	q.Close()
	if err := q.Ping(ctx); err == nil {
		t.Fatal("Ping on a closed queue succeeded")
	}
}

func testRetryRevivesDeadJobs(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	for _, k := range []string{"a", "b", "c"} {
		mustEnqueue(t, q, store.NewJob{Type: "t", Key: k, MaxAttempts: 2})
		finishJob(t, q, clk.Now(), k, store.OutcomeDead, "boom")
	}
	dead, err := q.Dead(ctx, 10)
	if err != nil || len(dead) != 3 || dead[0].Key != "a" || dead[1].Key != "b" || dead[2].Key != "c" || dead[0].State != store.StateDead {
		t.Fatalf("Dead = %d jobs, %v; want a, b and c, oldest first", len(dead), err)
	}
	if two, err := q.Dead(ctx, 2); err != nil || len(two) != 2 || two[1].Key != "b" {
		t.Errorf("Dead(2) = %d jobs, %v; want a and b", len(two), err)
	}
	if err := q.Retry(ctx, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := q.Retry(ctx, dead[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("second Retry = %v, want store.ErrNotFound", err)
	}
	if j := mustJob(t, q, "a"); j.State != store.StatePending || j.MaxAttempts-j.Attempt != 2 {
		t.Errorf("revived: %s, %d attempts left, want pending with 2", j.State, j.MaxAttempts-j.Attempt)
	}
	if n, err := q.RetryAllDead(ctx); n != 2 || err != nil {
		t.Errorf("RetryAllDead = %d, %v; want 2", n, err)
	}
	if s, _ := q.Stats(ctx); s.Dead != 0 || s.Total[store.StatePending] != 3 {
		t.Errorf("stats after retry: %+v", s.Total)
	}
}

// testRetryGrantsTheOriginalAttemptsEveryTime: each -retry gives a dead job
// its own number of attempts again, not the sum of all it had so far, and
// whether it died of exhausted attempts or of a permanent error.
func testRetryGrantsTheOriginalAttemptsEveryTime(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	id := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k", MaxAttempts: 2}).ID
	left := func() int { j := mustJob(t, q, "k"); return j.MaxAttempts - j.Attempt }
	for round, fails := range [][]store.Outcome{
		{store.OutcomeRetry, store.OutcomeDead}, // attempts exhausted
		{store.OutcomeRetry, store.OutcomeDead}, // exhausted again after a retry
		{store.OutcomeDead},                     // a permanent failure on its first attempt
		{store.OutcomeRetry, store.OutcomeDead},
	} {
		for _, o := range fails {
			finishJob(t, q, clk.Now(), "k", o, "boom")
		}
		if j := mustJob(t, q, "k"); j.State != store.StateDead {
			t.Fatalf("round %d: %s, want dead", round, j.State)
		}
		if err := q.Retry(ctx, id); err != nil {
			t.Fatalf("round %d: Retry: %v", round, err)
		}
		if got := left(); got != 2 {
			t.Errorf("round %d: %d attempts left after Retry, want 2", round, got)
		}
	}
	if _, err := q.RetryAllDead(ctx); err != nil {
		t.Fatal(err)
	}
	if got := left(); got != 2 {
		t.Errorf("after RetryAllDead of nothing: %d attempts left, want 2", got)
	}
	finishJob(t, q, clk.Now(), "k", store.OutcomeDead, "boom")
	if n, err := q.RetryAllDead(ctx); n != 1 || err != nil {
		t.Fatalf("RetryAllDead = %d, %v", n, err)
	}
	if got := left(); got != 2 {
		t.Errorf("after RetryAllDead: %d attempts left, want 2", got)
	}
}

// testRetryRecordsItsInstant: Retry and RetryAllDead set RetriedAt to the
// store's now, which every read of the job carries, the claim that the
// pool's give_up_after budget is judged on included; a job never retried
// has none.
func testRetryRecordsItsInstant(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	id := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k", MaxAttempts: 1}).ID
	finishJob(t, q, clk.Now(), "k", store.OutcomeDead, "boom")
	if j := mustJob(t, q, "k"); !j.RetriedAt.IsZero() {
		t.Errorf("RetriedAt before any retry = %v, want zero", j.RetriedAt)
	}
	// retriedAt checks every read of the job: by id, by key, in lists.
	retriedAt := func(what string, want time.Time) {
		t.Helper()
		byKey := mustJob(t, q, "k")
		byID, err := q.Job(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		listed, err := q.List(ctx, store.Filter{Limit: 10})
		if err != nil || len(listed) != 1 {
			t.Fatalf("List = %d jobs, %v; want 1", len(listed), err)
		}
		for _, j := range []*store.Job{byKey, byID, listed[0]} {
			if !j.RetriedAt.Equal(want) {
				t.Errorf("%s: RetriedAt = %v, want %v", what, j.RetriedAt, want)
			}
		}
	}
	clk.Advance(time.Hour)
	if err := q.Retry(ctx, id); err != nil {
		t.Fatal(err)
	}
	retriedAt("after Retry", t0.Add(time.Hour))
	js := claim(t, q, "test", clk.Now(), time.Minute, 10, "t")
	if len(js) != 1 {
		t.Fatalf("claimed %d jobs, want k", len(js))
	}
	if !js[0].RetriedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("claimed: RetriedAt = %v, want %v", js[0].RetriedAt, t0.Add(time.Hour))
	}
	r := store.Result{Job: js[0], Worker: "test/w0", Outcome: store.OutcomeDead, Error: "boom", Started: clk.Now(), Finished: clk.Now()}
	if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "test", Now: clk.Now(), Results: []store.Result{r}}); err != nil {
		t.Fatal(err)
	}
	retriedAt("dead again", t0.Add(time.Hour))
	clk.Advance(time.Hour)
	if n, err := q.RetryAllDead(ctx); n != 1 || err != nil {
		t.Fatalf("RetryAllDead = %d, %v; want 1", n, err)
	}
	retriedAt("after RetryAllDead", t0.Add(2*time.Hour))
}

// testSaveConfigLastConfig: the last saved config comes back byte for byte
// with its path, digest and load time; a later save replaces it.
func testSaveConfigLastConfig(t *testing.T, su *suite) {
	t.Parallel()
	ctx := context.Background()
	q, clk := su.open(t)
	if _, err := q.LastConfig(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("LastConfig of a new queue: %v, want ErrNotFound", err)
	}
	first := []byte("[tasks.a]\ncommand = [\"true\"]\n")
	if _, err := q.SaveConfig(ctx, "/etc/scheduler/schedules.toml", first); err != nil {
		t.Fatal(err)
	}
	clk.Advance(90 * time.Second)
	second := []byte("# \x00 not even text\n")
	saved, err := q.SaveConfig(ctx, "/etc/scheduler/other.toml", second)
	if err != nil {
		t.Fatal(err)
	}
	want := store.StoredConfig{Path: "/etc/scheduler/other.toml", Data: second, SHA256: store.ConfigSHA256(second), LoadedAt: t0.Add(90 * time.Second)}
	if !reflect.DeepEqual(*saved, want) {
		t.Errorf("SaveConfig = %+v, want %+v", *saved, want)
	}
	got, err := q.LastConfig(ctx)
	if err != nil || !reflect.DeepEqual(*got, want) {
		t.Errorf("LastConfig = %+v, %v; want %+v", got, err, want)
	}
}

// testLastRuns: LastRuns returns, per schedule, the job of its latest
// instant; jobs of no schedule are not among them.
func testLastRuns(t *testing.T, su *suite) {
	t.Parallel()
	q, _ := su.open(t)
	ctx := context.Background()
	for i, at := range []time.Time{t0, t0.Add(time.Hour), t0.Add(-time.Hour)} {
		mustEnqueue(t, q, store.NewJob{Type: "t", Key: fmt.Sprint("n", i), Schedule: "nightly", ScheduledAt: at})
	}
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "h", Schedule: "hourly", ScheduledAt: t0})
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "one-off"})
	last, err := q.LastRuns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 2 || last["nightly"].Key != "n1" || last["hourly"].Key != "h" {
		t.Errorf("LastRuns = %v", last)
	}
}
