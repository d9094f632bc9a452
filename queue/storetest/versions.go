package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// testClaimTakesOnlyAcceptedVersions: a claim takes, of each type, only
// the jobs of the versions it accepts (version 1 alone when Versions does
// not name the type), through the plain claim, the careful one and a
// limited type's; the others stay pending with no attempt spent, do not
// stop the jobs behind them, and are taken by a claim that accepts them.
// NextWake does not count them either.
func testClaimTakesOnlyAcceptedVersions(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	for _, j := range []store.NewJob{
		{Type: "a", Key: "a2", Version: 2, Priority: 9},
		{Type: "a", Key: "a1", Priority: 1},
		{Type: "a", Key: "a3", Version: 3, Priority: 9},
		{Type: "lim", Key: "lim2", Version: 2, Priority: 9},
		{Type: "lim", Key: "lim1", Priority: 1},
		{Type: "only2", Key: "only2-1", Priority: 9},
		{Type: "only2", Key: "only2-2", Version: 2},
		{Type: "c", Key: "c1"},
	} {
		mustEnqueue(t, q, j)
	}
	if _, err := q.Enqueue(ctx, store.NewJob{Type: "a", Version: -1}); err == nil {
		t.Error("Enqueue of version -1 succeeded, want an error")
	}
	keys := func(js []*store.Job) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.Key)
		}
		return out
	}
	claimIn := func(c store.Claim) []*store.Job {
		t.Helper()
		c.Lease = time.Minute
		res, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(), Claim: &c})
		if err != nil {
			t.Fatal(err)
		}
		return res.Claimed
	}
	// The careful claim looks at the jobs first (claimable), then takes them.
	got := keys(claimIn(store.Claim{N: 10, Types: []string{"c"}, StopBeforeLast: true, Prefetch: 5}))
	if want := []string{"c1"}; !slices.Equal(got, want) {
		t.Errorf("careful claim of c took %v, want %v", got, want)
	}
	if ready, _, err := q.NextWake(ctx, "P", []string{"a", "lim"}, nil); err != nil || !ready.Equal(t0) {
		t.Errorf("NextWake of a and lim at version 1 = %v, %v; want t0 (a1 and lim1)", ready, err)
	}
	got = keys(claimIn(store.Claim{N: 10, Types: []string{"a"}, Limited: map[string]int{"lim": 5}}))
	if want := []string{"a1", "lim1"}; !slices.Equal(got, want) {
		t.Errorf("claim of version 1 took %v, want %v", got, want)
	}
	for _, k := range []string{"a2", "a3", "lim2", "only2-1", "only2-2"} {
		if j := mustJob(t, q, k); j.State != store.StatePending || j.Attempt != 0 {
			t.Errorf("%s: %s at attempt %d, want pending at attempt 0", k, j.State, j.Attempt)
		}
	}
	if ready, _, err := q.NextWake(ctx, "P", []string{"a", "lim"}, nil); err != nil || !ready.IsZero() {
		t.Errorf("NextWake of a and lim at version 1 = %v, %v; want none (a2, a3 and lim2 are not of version 1)", ready, err)
	}
	versions := store.Versions{"a": {1, 2}, "lim": {2}, "only2": {2}}
	if ready, _, err := q.NextWake(ctx, "P", []string{"a", "lim", "only2"}, versions); err != nil || !ready.Equal(t0) {
		t.Errorf("NextWake with %v = %v, %v; want t0", versions, ready, err)
	}
	got = keys(claimIn(store.Claim{N: 10, Types: []string{"a", "only2"}, Limited: map[string]int{"lim": 5}, Versions: versions}))
	if want := []string{"a2", "lim2", "only2-2"}; !slices.Equal(got, want) {
		t.Errorf("claim with %v took %v, want %v", versions, got, want)
	}
	if j := mustJob(t, q, "a2"); j.Version != 2 || j.State != store.StateRunning {
		t.Errorf("a2: version %d, %s; want version 2, running", j.Version, j.State)
	}
	for _, k := range []string{"a3", "only2-1"} {
		if j := mustJob(t, q, k); j.State != store.StatePending || j.Attempt != 0 {
			t.Errorf("%s: %s at attempt %d, want pending at attempt 0", k, j.State, j.Attempt)
		}
	}
	if ready, _, err := q.NextWake(ctx, "P", []string{"a", "lim", "only2"}, versions); err != nil || !ready.IsZero() {
		t.Errorf("NextWake with %v = %v, %v; want none", versions, ready, err)
	}
	got = keys(claimIn(store.Claim{N: 10, Types: []string{"a"}, StopBeforeLast: true, Prefetch: 5, Versions: store.Versions{"a": {3}}}))
	if want := []string{"a3"}; !slices.Equal(got, want) {
		t.Errorf("careful claim of a at version 3 took %v, want %v", got, want)
	}
}

// testHandlersSeeVersionsWaiting: Handlers reports the ready jobs of a
// version that no running pool accepts, by type and version, with the
// versions the pools accept, beside the types no pool runs; a pool that
// accepts the version takes them off the list.
func testHandlersSeeVersionsWaiting(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "t1"})
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "t2a", Version: 2})
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "t2b", Version: 2})
	mustEnqueue(t, q, store.NewJob{Type: "x", Key: "x2", Version: 2})
	mustEnqueue(t, q, store.NewJob{Type: "x", Key: "x1"})
	present := func(owner string, types []string, versions store.Versions) {
		t.Helper()
		_, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: clk.Now(),
			Presence: &store.Presence{Types: types, Versions: versions, Process: store.Process{PID: 7, Host: "h", Version: "v1"}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	present("A", []string{"t", "x"}, nil)
	clk.Advance(time.Minute)
	// Every type has a handler: only the jobs of version 2 wait.
	h, err := q.Unhandled(ctx)
	want := []store.Waiting{
		{Type: "t", Version: 2, Accepted: []int{1}, Ready: 2, Oldest: time.Minute},
		{Type: "x", Version: 2, Accepted: []int{1}, Ready: 1, Oldest: time.Minute},
	}
	if err != nil || h.Pools != 1 || !waitingEqual(h.Waiting, want) {
		t.Errorf("Handlers = %+v, %v; want one pool, %+v", h, err, want)
	}
	present("A", []string{"t"}, nil)
	h, err = q.Unhandled(ctx)
	want = []store.Waiting{
		{Type: "t", Version: 2, Accepted: []int{1}, Ready: 2, Oldest: time.Minute},
		{Type: "x", Ready: 2, Oldest: time.Minute},
	}
	if err != nil || h.Pools != 1 || !waitingEqual(h.Waiting, want) {
		t.Errorf("Handlers = %+v, %v; want one pool, %+v", h, err, want)
	}
	present("B", []string{"t", "x"}, store.Versions{"t": {2, 3}, "x": {2}})
	h, err = q.Unhandled(ctx)
	want = []store.Waiting{{Type: "x", Version: 1, Accepted: []int{2}, Ready: 1, Oldest: time.Minute}}
	if err != nil || h.Pools != 2 || !waitingEqual(h.Waiting, want) {
		t.Errorf("Handlers with B = %+v, %v; want two pools, %+v", h, err, want)
	}
	present("C", []string{"x"}, nil)
	if h, err := q.Unhandled(ctx); err != nil || len(h.Waiting) != 0 {
		t.Errorf("Handlers with C = %+v, %v; want nothing waiting", h, err)
	}
}

func waitingEqual(a, b []store.Waiting) bool {
	return slices.EqualFunc(a, b, func(x, y store.Waiting) bool {
		return x.Type == y.Type && x.Version == y.Version && slices.Equal(x.Accepted, y.Accepted) &&
			x.Ready == y.Ready && x.Oldest == y.Oldest
	})
}
