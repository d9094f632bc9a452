package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// testHeartbeatExtendsTheOwnersLeases: a PoolTx's heartbeat extends the
// leases of every job its owner runs, and of no other owner's, so that a
// reclaim after the old lease takes only the others'.
func testHeartbeatExtendsTheOwnersLeases(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "p1"})
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "p2"})
	if js := claim(t, q, "P", clk.Now(), time.Minute, 2, "t"); len(js) != 2 {
		t.Fatalf("P claimed %d jobs, want 2", len(js))
	}
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "q"})
	if js := claim(t, q, "Q", clk.Now(), time.Minute, 1, "t"); len(js) != 1 {
		t.Fatalf("Q claimed %d jobs, want 1", len(js))
	}
	clk.Advance(50 * time.Second)
	until := clk.Now().Add(time.Minute)
	if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(), Heartbeat: until}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"p1", "p2"} {
		if j := mustJob(t, q, k); !j.LeaseUntil.Equal(until) || j.Owner != "P" {
			t.Errorf("%s: lease until %v by %q, want %v by P", k, j.LeaseUntil, j.Owner, until)
		}
	}
	clk.Advance(30 * time.Second)
	if n, err := reclaim(ctx, q); n != 1 || err != nil {
		t.Fatalf("Reclaim = %d, %v; want Q's job alone", n, err)
	}
	if j := mustJob(t, q, "q"); j.State != store.StatePending {
		t.Errorf("q: %s, want pending again", j.State)
	}
	if j := mustJob(t, q, "p1"); j.State != store.StateRunning {
		t.Errorf("p1: %s, want running under its renewed lease", j.State)
	}
}

// testPresenceDaemonsHandlers: a PoolTx's presence writes the pool's row,
// which Daemons lists with its process and worker count and Handlers counts while it is
// renewed within AliveWithin, the ready jobs of the types no running pool
// has waiting; Absent deletes the row, and a pool's first presence forgets
// the rows of pools gone for PresenceKept.
func testPresenceDaemonsHandlers(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "t"})
	mustEnqueue(t, q, store.NewJob{Type: "x", Key: "x"})
	mustEnqueue(t, q, store.NewJob{Type: "later", Key: "later", RunAt: t0.Add(time.Hour)})
	present := func(owner string, first bool, types ...string) {
		t.Helper()
		_, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: clk.Now(),
			Presence: &store.Presence{Types: types, Process: store.Process{PID: 7, Host: "h", Version: "v1"}, Workers: 4, First: first}})
		if err != nil {
			t.Fatal(err)
		}
	}
	present("A", true, "t")
	ds, err := q.Pools(ctx)
	want := store.PoolRow{Owner: "A", PID: 7, Host: "h", Version: "v1", StartedAt: t0, LastSeen: t0, Workers: 4}
	if err != nil || len(ds) != 1 || ds[0] != want {
		t.Fatalf("Daemons = %+v, %v; want %+v", ds, err, want)
	}
	clk.Advance(time.Minute)
	h, err := q.Unhandled(ctx)
	if err != nil || !h.Known || h.Pools != 1 || len(h.Waiting) != 1 || h.Waiting[0].Type != "x" ||
		h.Waiting[0].Ready != 1 || h.Waiting[0].Oldest != time.Minute {
		t.Errorf("Handlers = %+v, %v; want one pool, x waiting a minute", h, err)
	}
	present("A", false, "t", "x")
	if ds, _ := q.Pools(ctx); len(ds) != 1 || !ds[0].StartedAt.Equal(t0) || !ds[0].LastSeen.Equal(clk.Now()) {
		t.Errorf("renewed row: %+v, want started at t0, seen now", ds)
	}
	if h, _ := q.Unhandled(ctx); h.Pools != 1 || len(h.Waiting) != 0 {
		t.Errorf("Handlers after the pool took x = %+v, want nothing waiting", h)
	}
	clk.Advance(store.AliveWithin + time.Second)
	if h, _ := q.Unhandled(ctx); h.Pools != 0 || len(h.Waiting) != 2 {
		t.Errorf("Handlers of a silent pool = %+v, want no pool, t and x waiting", h)
	}
	if ds, _ := q.Pools(ctx); len(ds) != 1 || ds[0].Alive(clk.Now()) {
		t.Errorf("Daemons of a silent pool = %+v, want its row, not alive", ds)
	}
	if err := q.Leave(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if ds, err := q.Pools(ctx); err != nil || len(ds) != 0 {
		t.Errorf("Daemons after Absent = %+v, %v; want none", ds, err)
	}
	present("old", false)
	clk.Advance(store.PresenceKept + time.Minute)
	present("recent", false)
	present("new", true)
	var owners []string
	ds, _ = q.Pools(ctx)
	for _, d := range ds {
		owners = append(owners, d.Owner)
	}
	if len(owners) != 2 || owners[0] == "old" || owners[1] == "old" {
		t.Errorf("Daemons after a first presence = %v, want recent and new, old forgotten", owners)
	}
}

// testPresenceRecordsTheConfig: a pool's row records the config its
// process runs and when it loaded it (to the millisecond), each renewal
// writes the process's current one, and a pool that records none reads
// back "" and the zero time.
func testPresenceRecordsTheConfig(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	present := func(owner string, pr store.Process) {
		t.Helper()
		if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: owner, Now: clk.Now(), Presence: &store.Presence{Types: []string{"t"}, Process: pr}}); err != nil {
			t.Fatal(err)
		}
	}
	byOwner := func() map[string]store.PoolRow {
		t.Helper()
		ds, err := q.Pools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]store.PoolRow{}
		for _, d := range ds {
			m[d.Owner] = d
		}
		return m
	}
	sha1 := store.ConfigSHA256([]byte("one"))
	loaded := t0.Add(-time.Minute + 1234567*time.Microsecond) // 1.234567s past: stored as 1.234s
	present("A", store.Process{PID: 7, Host: "h", Version: "v1", Config: sha1, ConfigAt: loaded})
	present("B", store.Process{PID: 8, Host: "h", Version: "v1"})
	ds := byOwner()
	if a := ds["A"]; a.Config != sha1 || !a.ConfigAt.Equal(loaded.Truncate(time.Millisecond)) {
		t.Errorf("A's row = %+v, want config %s loaded at %v", a, sha1, loaded.Truncate(time.Millisecond))
	}
	if b := ds["B"]; b.Config != "" || !b.ConfigAt.IsZero() {
		t.Errorf("B's row = %+v, want no config and the zero time", b)
	}

	clk.Advance(time.Second)
	sha2 := store.ConfigSHA256([]byte("two"))
	present("A", store.Process{PID: 7, Host: "h", Version: "v1", Config: sha2, ConfigAt: clk.Now()})
	ds = byOwner()
	if a := ds["A"]; a.Config != sha2 || !a.ConfigAt.Equal(clk.Now()) || !a.StartedAt.Equal(t0) {
		t.Errorf("A's row after a reload = %+v, want config %s loaded at %v, started at t0", a, sha2, clk.Now())
	}
	if b := ds["B"]; b.Config != "" {
		t.Errorf("B's row after A's reload = %+v, want no config", b)
	}
}

// testCancelRequestsReachTheOwner: a cancel requested on a running job is
// reported to the pool that holds its lease, with the attempt and who
// asked, and to no other; recorded cancelled, the job is reported no more.
func testCancelRequestsReachTheOwner(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	id := mustEnqueue(t, q, store.NewJob{Type: "t", Key: "k"}).ID
	js := claim(t, q, "P", clk.Now(), time.Minute, 1, "t")
	if len(js) != 1 {
		t.Fatalf("claimed %d jobs", len(js))
	}
	if reqs, err := q.CancelRequests(ctx, "P"); err != nil || len(reqs) != 0 {
		t.Fatalf("CancelRequests before any = %+v, %v", reqs, err)
	}
	if st, err := q.RequestCancel(ctx, id, "alice"); err != nil || st != store.StateRunning {
		t.Fatalf("RequestCancel = %s, %v", st, err)
	}
	want := store.CancelRequest{ID: id, Attempt: 1, By: "alice"}
	if reqs, err := q.CancelRequests(ctx, "P"); err != nil || len(reqs) != 1 || reqs[0] != want {
		t.Errorf("CancelRequests(P) = %+v, %v; want %+v", reqs, err, want)
	}
	if reqs, err := q.CancelRequests(ctx, "Q"); err != nil || len(reqs) != 0 {
		t.Errorf("CancelRequests(Q) = %+v, %v; want none", reqs, err)
	}
	r := store.Result{Job: js[0], Worker: "P/w0", Outcome: store.OutcomeCancelled, Error: "cancelled by alice", Started: clk.Now(), Finished: clk.Now()}
	if _, err := q.CommitPoolTx(ctx, store.PoolTx{Owner: "P", Now: clk.Now(), Results: []store.Result{r}}); err != nil {
		t.Fatal(err)
	}
	if j := mustJob(t, q, "k"); j.State != store.StateCancelled {
		t.Errorf("job: %s, want cancelled", j.State)
	}
	if reqs, err := q.CancelRequests(ctx, "P"); err != nil || len(reqs) != 0 {
		t.Errorf("CancelRequests after the job ended = %+v, %v", reqs, err)
	}
	if _, err := q.RequestCancel(ctx, id+1, "bob"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RequestCancel of no job = %v, want ErrNotFound", err)
	}
}

// testNextWake: NextWake reports the earliest run_at of a pending job of
// the types asked for, whatever its priority, and the earliest lease held
// by another owner.
func testNextWake(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	ready, lease, err := q.NextWake(ctx, "me", []string{"t"}, nil)
	if err != nil || !ready.IsZero() || !lease.IsZero() {
		t.Fatalf("empty queue: %v %v %v", ready, lease, err)
	}
	for i, j := range []struct {
		prio int
		at   time.Duration
	}{{5, 10 * time.Minute}, {5, 20 * time.Minute}, {0, time.Minute}, {-3, 30 * time.Second}, {-3, time.Hour}, {7, 2 * time.Hour}} {
		mustEnqueue(t, q, store.NewJob{Type: "t", Key: "t" + string(rune('a'+i)), Priority: j.prio, RunAt: t0.Add(j.at)})
	}
	mustEnqueue(t, q, store.NewJob{Type: "other", Key: "other", RunAt: t0.Add(time.Second)})
	ready, lease, err = q.NextWake(ctx, "me", []string{"t"}, nil)
	if err != nil || !ready.Equal(t0.Add(30*time.Second)) || !lease.IsZero() {
		t.Errorf("NextWake = %v, %v, %v; want %v and no lease", ready, lease, err, t0.Add(30*time.Second))
	}
	if ready, _, _ := q.NextWake(ctx, "me", []string{"t", "other"}, nil); !ready.Equal(t0.Add(time.Second)) {
		t.Errorf("NextWake of t and other = %v, want %v", ready, t0.Add(time.Second))
	}
	clk.Advance(time.Minute)
	claim(t, q, "me", clk.Now(), time.Hour, 1, "t")
	claim(t, q, "you", clk.Now(), 2*time.Hour, 1, "t")
	if _, lease, err := q.NextWake(ctx, "me", []string{"t"}, nil); err != nil || !lease.Equal(clk.Now().Add(2*time.Hour)) {
		t.Errorf("lease = %v, %v; want the other owner's, %v", lease, err, clk.Now().Add(2*time.Hour))
	}
}

// testPurgedKeysStayUsed: Purge deletes done jobs finished before its
// bound and keeps the others; the key of a purged job stays used, so that
// enqueuing under it again inserts nothing and says so.
func testPurgedKeysStayUsed(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "old"})
	finishJob(t, q, clk.Now(), "old", store.OutcomeDone, "")
	mustEnqueue(t, q, store.NewJob{Type: "d", Key: "dead"})
	finishJob(t, q, clk.Now(), "dead", store.OutcomeDead, "boom")
	clk.Advance(8 * 24 * time.Hour)
	mustEnqueue(t, q, store.NewJob{Type: "t", Key: "recent"})
	finishJob(t, q, clk.Now(), "recent", store.OutcomeDone, "")
	jobs, _, err := purge(ctx, q, clk.Now().Add(-7*24*time.Hour))
	if err != nil || jobs != 1 {
		t.Fatalf("Purge = %d, %v; want the old done job", jobs, err)
	}
	if _, err := q.JobByKey(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("purged job: %v, want ErrNotFound", err)
	}
	mustJob(t, q, "dead")
	mustJob(t, q, "recent")
	for name, enqueue := range map[string]func() (store.Enqueued, error){
		"Enqueue": func() (store.Enqueued, error) { return q.Enqueue(ctx, store.NewJob{Type: "t", Key: "old"}) },
		"EnqueueBatch": func() (store.Enqueued, error) {
			res, err := q.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: "old"}})
			if err != nil {
				return store.Enqueued{}, err
			}
			return res[0], nil
		},
	} {
		if r, err := enqueue(); err != nil || r.Inserted || !r.Purged || r.ID != 0 {
			t.Errorf("%s of a purged key = %+v, %v; want nothing inserted, Purged", name, r, err)
		}
	}
	// In a batch, beside new keys, one of them twice; in a batch of many
	// rows; in a schedule's Advance.
	res, err := q.EnqueueBatch(ctx, []store.NewJob{{Type: "t", Key: "old"}, {Type: "t", Key: "k2"}, {Type: "t", Key: "k2"}})
	if err != nil || !res[0].Purged || res[0].ID != 0 || !res[1].Inserted || res[2].Inserted || res[2].ID != res[1].ID {
		t.Errorf("EnqueueBatch of a purged key and a new one twice = %+v, %v", res, err)
	}
	var big []store.NewJob
	for i := range 250 {
		big = append(big, store.NewJob{Type: "t", Key: fmt.Sprint("big", i)})
	}
	big[3].Key, big[220].Key = "old", "old"
	if res, err := q.EnqueueBatch(ctx, big); err != nil || !res[3].Purged || !res[220].Purged || !res[0].Inserted || !res[249].Inserted {
		t.Errorf("EnqueueBatch of 250 with a purged key: %v; results %+v %+v", err, res[3], res[220])
	}
	adv, err := q.Advance(ctx, store.Advance{Schedule: "s", To: clk.Now(), Jobs: []store.NewJob{
		{Type: "t", Key: "old", Schedule: "s", ScheduledAt: clk.Now(), SkipIfActive: true},
		{Type: "t", Key: "old", Schedule: "s", Item: "b", ScheduledAt: clk.Now()}}})
	if err != nil || !adv[0].Purged || adv[0].Inserted || !adv[1].Purged || adv[1].Inserted {
		t.Errorf("Advance with a purged key = %+v, %v", adv, err)
	}
	if _, err := q.JobByKey(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("purged key enqueued again: %v", err)
	}
}

// testIDsAreNeverDrawnAgain: the id of a purged job is not drawn again,
// even when it was the newest: a late result of the purged job, or an
// operator's reference to it, must not reach another job.
func testIDsAreNeverDrawnAgain(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	ctx := context.Background()
	var last int64
	for _, k := range []string{"a", "b"} {
		last = mustEnqueue(t, q, store.NewJob{Type: "t", Key: k}).ID
		finishJob(t, q, clk.Now(), k, store.OutcomeDone, "")
	}
	clk.Advance(time.Hour)
	if _, _, err := purge(ctx, q, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Job(ctx, last-1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the older job after Purge: %v, want ErrNotFound", err)
	}
	for _, k := range []string{"c", "d"} {
		if id := mustEnqueue(t, q, store.NewJob{Type: "t", Key: k}).ID; id <= last {
			t.Errorf("job %s has id %d, drawn before (the newest purged is %d)", k, id, last)
		}
	}
}
