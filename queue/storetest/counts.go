package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// JobCounter is what an engine's test hooks add to its store for this
// suite: the jobs by state and type counted row by row (a COUNT(*) GROUP
// BY), against which the counts Stats reads are checked.
type JobCounter interface {
	CountJobs(ctx context.Context) (map[store.State]map[string]int, error)
}

// checkCounts fails t unless Stats of q counts what a count of every row
// of the database finds.
func checkCounts(t *testing.T, q store.Engine, step string) {
	t.Helper()
	jc, ok := q.(JobCounter)
	if !ok {
		t.Fatalf("%T has no CountJobs (see JobCounter): the engine's tests must add it", q)
	}
	ctx := context.Background()
	want, err := jc.CountJobs(ctx)
	if err != nil {
		t.Fatalf("%s: CountJobs: %v", step, err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatalf("%s: Stats: %v", step, err)
	}
	if got, w := countsText(st.Counts), countsText(want); got != w {
		t.Fatalf("after %s: Stats counts %s, the rows hold %s", step, got, w)
	}
	total := 0
	for _, n := range st.Total {
		total += n
	}
	for _, byType := range want {
		for _, n := range byType {
			total -= n
		}
	}
	if total != 0 {
		t.Fatalf("after %s: Stats totals %v disagree with the counts", step, st.Total)
	}
}

// countsText writes counts as "state/type=n ..." in order, zeros left out.
func countsText(m map[store.State]map[string]int) string {
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(m)) {
		for _, typ := range slices.Sorted(maps.Keys(m[st])) {
			if n := m[st][typ]; n != 0 {
				parts = append(parts, fmt.Sprintf("%s/%s=%d", st, typ, n))
			}
		}
	}
	return strings.Join(parts, " ")
}

// testCountsAreExact runs every operation that changes a job's state, on
// two stores sharing a database, and checks the counts Stats reads against
// the rows after each one.
func testCountsAreExact(t *testing.T, su *suite) {
	t.Parallel()
	c := &countsRun{t: t, ctx: context.Background()}
	c.a, c.b, c.clk = su.openTwo(t)
	c.check("open")
	c.enqueues()
	c.many()
	c.claimsAndResults()
	c.cancels()
	c.reclaimsRetriesPurges()
}

// countsRun is the state of testCountsAreExact, whose phases are its
// methods: two stores sharing a database, and the instant of the claims.
type countsRun struct {
	t    *testing.T
	ctx  context.Context
	a, b store.Engine
	clk  *clock.Fake
	now  time.Time
}

// check checks the counts of both stores after step.
func (c *countsRun) check(step string) {
	c.t.Helper()
	checkCounts(c.t, c.a, step)
	checkCounts(c.t, c.b, step)
}

// enqueues enqueues and advances, a few jobs at a time.
func (c *countsRun) enqueues() {
	t, a, b, ctx, check := c.t, c.a, c.b, c.ctx, c.check
	mustEnqueue(t, a, store.NewJob{Type: "x", Key: "x1"})
	mustEnqueue(t, a, store.NewJob{Type: "x", Key: "x1"}) // a used key inserts nothing
	check("Enqueue")
	if _, err := b.EnqueueBatch(ctx, []store.NewJob{
		{Type: "x", Key: "x2"}, {Type: "y", Key: "y1"}, {Type: "y", Key: "y2", MaxAttempts: 1},
		{Type: "y", Key: "x1"}, {Type: "z", Key: "z1", MaxAttempts: 1}, {Type: "z", Key: "z2"},
	}); err != nil {
		t.Fatal(err)
	}
	check("EnqueueBatch")
	if _, err := a.Advance(ctx, store.Advance{Schedule: "s", To: t0,
		Jobs: []store.NewJob{
			{Type: "s", Key: "s|a|1", Schedule: "s", Item: "a", ScheduledAt: t0},
			{Type: "s", Key: "s|b|1", Schedule: "s", Item: "b", ScheduledAt: t0},
		}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.AdvanceBatch(ctx, []store.Advance{{Schedule: "s", From: t0, To: t0.Add(time.Minute),
		Jobs: []store.NewJob{
			{Type: "s", Key: "s|a|2", Schedule: "s", Item: "a", ScheduledAt: t0.Add(time.Minute), SkipIfActive: true},
			{Type: "s", Key: "s|c|2", Schedule: "s", Item: "c", ScheduledAt: t0.Add(time.Minute), SkipIfActive: true},
		}}}); err != nil {
		t.Fatal(err)
	}
	check("Advance")
}

// many enqueues and advances many jobs at once.
func (c *countsRun) many() {
	t, a, b, ctx, check := c.t, c.a, c.b, c.ctx, c.check
	// Many jobs at once, which an engine may count otherwise than one by
	// one: a batch with keys used already, and a tick of many schedules,
	// some of whose jobs are skipped as overlapping.
	// The first hundred hold a key used before, the second a key of the
	// first, the third are all new.
	for _, dups := range []bool{true, false} {
		var many []store.NewJob
		for i := range 250 {
			many = append(many, store.NewJob{Type: fmt.Sprint("m", i%3), Key: fmt.Sprintf("m%v-%d", dups, i)})
		}
		if dups {
			many[50].Key, many[150].Key = "x1", many[10].Key
		}
		res, err := a.EnqueueBatch(ctx, many)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{"x1": true}
		for i, r := range res {
			want := !seen[many[i].Key]
			seen[many[i].Key] = true
			if j := mustJob(t, a, many[i].Key); r.ID != j.ID || r.Key != j.Key || r.Inserted != want {
				t.Fatalf("EnqueueBatch of many: job %d: %+v, the job of its key is %d, %s of type %s; want inserted %v", i, r, j.ID, j.Key, j.Type, want)
			}
		}
		check("EnqueueBatch of many")
	}
	var tick []store.Advance
	for i := range 150 {
		name := fmt.Sprintf("t%03d", i)
		at := t0.Add(time.Duration(i%2) * time.Minute)
		tick = append(tick, store.Advance{Schedule: name, To: at, Jobs: []store.NewJob{
			{Type: "t", Key: name + "|1", Schedule: name, ScheduledAt: at},
			{Type: "t", Key: name + "|2", Schedule: name, ScheduledAt: at, SkipIfActive: i%5 == 0},
		}})
	}
	if _, err := b.AdvanceBatch(ctx, tick); err != nil {
		t.Fatal(err)
	}
	check("AdvanceBatch of many")
	if _, err := b.RaiseAlarms(ctx, store.AlarmBatch{Alarms: []store.NewAlarm{
		missedAlarm("s", "a", t0, 0, "page", "chat"),
	}}); err != nil {
		t.Fatal(err)
	}
	check("RaiseAlarms")
}

// claimsAndResults claims, and records every outcome.
func (c *countsRun) claimsAndResults() {
	t, a, b, ctx, check, clk := c.t, c.a, c.b, c.ctx, c.check, c.clk
	// A claim with a prefetch that gives back the jobs from the first one
	// on its last attempt (y2) on.
	now := clk.Now()
	c.now = now
	res, err := a.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: now,
		Claim: &store.Claim{Lease: time.Minute, N: 4, Types: []string{"x", "y"}, Prefetch: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.GaveBack {
		t.Fatalf("claim took %d jobs and held none back: the test does not reach the give-back", len(res.Claimed))
	}
	check("claim with a give-back")
	held := res.Claimed
	res, err = b.CommitPoolTx(ctx, store.PoolTx{Owner: "q", Now: now,
		Claim: &store.Claim{Lease: time.Minute, N: 10, Types: []string{"y", "s"}, Limited: map[string]int{"z": 1}}})
	if err != nil {
		t.Fatal(err)
	}
	check("claim with a limited type")
	byKey := map[string]*store.Job{}
	for _, j := range append(held, res.Claimed...) {
		byKey[j.Key] = j
	}
	result := func(key string, o store.Outcome) store.Result {
		j := byKey[key]
		if j == nil {
			t.Fatalf("%s was not claimed (claimed: %v)", key, slices.Collect(maps.Keys(byKey)))
		}
		return store.Result{Job: j, Worker: j.Owner + "/w0", Outcome: o, Error: "e", Started: now, Finished: now, RetryAt: now}
	}

	// Every outcome, and a stale result (a fence that fails) beside them.
	pResults := []store.Result{}
	for _, j := range held {
		o := store.OutcomeDone
		if j.Key == "x2" {
			o = store.OutcomeRetry
		}
		pResults = append(pResults, result(j.Key, o))
	}
	if _, err := a.CommitPoolTx(ctx, store.PoolTx{Owner: "p", Now: now, Results: pResults}); err != nil {
		t.Fatal(err)
	}
	check("done and retry")
	stale := result(held[0].Key, store.OutcomeDead)
	qResults := []store.Result{stale}
	outcomes := map[string]store.Outcome{"s|c|2": store.OutcomeReleased, "y2": store.OutcomeDead, "s|a|1": store.OutcomeDone, "s|b|1": store.OutcomeCancelled}
	for _, j := range res.Claimed {
		if o, ok := outcomes[j.Key]; ok {
			qResults = append(qResults, result(j.Key, o))
		}
	}
	tr, err := b.CommitPoolTx(ctx, store.PoolTx{Owner: "q", Now: now, Results: qResults})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Fenced[0] {
		t.Fatal("a result of a job done by another owner held its fence")
	}
	check("dead, released, cancelled and a stale result")

	if len(tr.Fenced) != len(qResults) || len(qResults) != 5 {
		t.Fatalf("%d results recorded, want 5 (claimed: %v)", len(tr.Fenced), slices.Collect(maps.Keys(byKey)))
	}
}

// cancels cancels pending and running jobs.
func (c *countsRun) cancels() {
	t, a, b, ctx, check, now := c.t, c.a, c.b, c.ctx, c.check, c.now
	// Cancels: a pending job, at once; a running one, by request, settled
	// when its retry makes it pending; one left to its reclaim.
	x2 := mustJob(t, a, "x2")
	if err := cancelPending(ctx, a, x2.ID); err != nil {
		t.Fatal(err)
	}
	check("Cancel")
	x3 := mustEnqueue(t, a, store.NewJob{Type: "x", Key: "x3"})
	if _, err := b.RequestCancel(ctx, x3.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	check("RequestCancel of a pending job")
	mustEnqueue(t, a, store.NewJob{Type: "w", Key: "w1"})
	mustEnqueue(t, a, store.NewJob{Type: "w", Key: "w2"})
	mustEnqueue(t, a, store.NewJob{Type: "w", Key: "w3", MaxAttempts: 1})
	mustEnqueue(t, a, store.NewJob{Type: "w", Key: "w4"})
	ws := claim(t, a, "r", now, time.Minute, 10, "w")
	check("claim of w")
	for _, j := range ws {
		if j.Key == "w1" || j.Key == "w4" {
			if _, err := a.RequestCancel(ctx, j.ID, "bob"); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("RequestCancel of running jobs")
	for _, j := range ws {
		if j.Key == "w1" {
			r := store.Result{Job: j, Worker: "r/w0", Outcome: store.OutcomeRetry, Started: now, Finished: now, RetryAt: now}
			if _, err := a.CommitPoolTx(ctx, store.PoolTx{Owner: "r", Now: now, Results: []store.Result{r}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("a retry settled as cancelled")
}

// reclaimsRetriesPurges reclaims leases, retries dead jobs, purges.
func (c *countsRun) reclaimsRetriesPurges() {
	t, a, b, ctx, check, clk := c.t, c.a, c.b, c.ctx, c.check, c.clk
	// Reclaims: to pending (w2), to dead (w3), to cancelled (w4), by the
	// PoolTx of another owner and by Reclaim.
	clk.Advance(2 * time.Minute)
	if _, err := b.CommitPoolTx(ctx, store.PoolTx{Owner: "q2", Now: clk.Now(), Reclaim: true}); err != nil {
		t.Fatal(err)
	}
	check("reclaim in a transaction")
	claim(t, a, "gone", clk.Now(), time.Minute, 1, "w")
	clk.Advance(2 * time.Minute)
	if _, err := reclaim(ctx, a); err != nil {
		t.Fatal(err)
	}
	check("Reclaim")

	// Retries of dead jobs, one then all.
	dead, err := a.Dead(ctx, 10)
	if err != nil || len(dead) < 2 {
		t.Fatalf("Dead = %d jobs, %v; want at least 2", len(dead), err)
	}
	if err := b.Retry(ctx, dead[0].ID); err != nil {
		t.Fatal(err)
	}
	check("Retry")
	if _, err := a.RetryAllDead(ctx); err != nil {
		t.Fatal(err)
	}
	check("RetryAllDead")

	// Purge, directly and through Maintain.
	clk.Advance(time.Hour)
	if n, _, err := purge(ctx, a, clk.Now()); err != nil || n == 0 {
		t.Fatalf("Purge = %d, %v; want some jobs purged", n, err)
	}
	check("Purge")
	mustEnqueue(t, a, store.NewJob{Type: "v", Key: "v1"})
	finishJob(t, a, clk.Now(), "v1", store.OutcomeDone, "")
	mustEnqueue(t, a, store.NewJob{Type: "v", Key: "v2"})
	clk.Advance(time.Hour)
	if _, err := b.Maintain(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	check("Maintain")
}
