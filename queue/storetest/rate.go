package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// rateClaim claims for owner at now with one rated type and nothing else.
func rateClaim(t *testing.T, q interface {
	CommitPoolTx(context.Context, store.PoolTx) (store.PoolTxResult, error)
}, owner string, now time.Time, rc store.RatedClaim) store.PoolTxResult {
	t.Helper()
	res, err := q.CommitPoolTx(context.Background(), store.PoolTx{Owner: owner, Now: now,
		Claim: &store.Claim{Lease: time.Hour, N: rc.Room, Rated: []store.RatedClaim{rc}}})
	if err != nil {
		t.Fatalf("rated claim: %v", err)
	}
	return res
}

// testRateLimitHoldsAcrossStores: a rated claim takes the starts its
// bucket allows, Burst at once and then one per Every, whichever store
// (process, node) claims; the jobs it holds back stay pending at attempt
// 0, and RateWait says when the bucket allows the next. A paused bucket
// gives no start before its pause ends.
func testRateLimitHoldsAcrossStores(t *testing.T, su *suite) {
	t.Parallel()
	a, b, clk := su.openTwo(t)
	for i := range 6 {
		mustEnqueue(t, a, store.NewJob{Type: "r", Key: fmt.Sprint("r", i)})
	}
	mustEnqueue(t, a, store.NewJob{Type: "free", Key: "free"})
	// A job of a version the pool does not run, first in claim order: passed
	// over, and it spends no start.
	mustEnqueue(t, a, store.NewJob{Type: "r", Key: "v2", Version: 2, Priority: 1})
	l := store.RateLimit{Every: 10 * time.Second, Burst: 2}
	rc := store.RatedClaim{Type: "r", Limit: l, Room: 10}
	now := clk.Now()
	res := rateClaim(t, a, "A", now, rc)
	if len(res.Claimed) != 2 || !res.RateWait.Equal(now.Add(10*time.Second)) {
		t.Fatalf("first claim took %d jobs, wait %v; want the burst of 2, wait %v", len(res.Claimed), res.RateWait, now.Add(10*time.Second))
	}
	for _, j := range res.Claimed {
		if j.Type != "r" {
			t.Errorf("claimed a job of type %q", j.Type)
		}
	}
	if res := rateClaim(t, b, "B", now, rc); len(res.Claimed) != 0 || !res.RateWait.Equal(now.Add(10*time.Second)) {
		t.Fatalf("the other store took %d jobs at once, wait %v; want none, wait %v", len(res.Claimed), res.RateWait, now.Add(10*time.Second))
	}
	if j := mustJob(t, a, "r2"); j.State != store.StatePending || j.Attempt != 0 {
		t.Errorf("held-back job: %s at attempt %d, want pending at 0", j.State, j.Attempt)
	}
	clk.Advance(9 * time.Second)
	if res := rateClaim(t, b, "B", clk.Now(), rc); len(res.Claimed) != 0 {
		t.Fatalf("took %d jobs 1s before the bucket allows one", len(res.Claimed))
	}
	clk.Advance(time.Second)
	if res := rateClaim(t, b, "B", clk.Now(), rc); len(res.Claimed) != 1 || !res.RateWait.Equal(clk.Now().Add(10*time.Second)) {
		t.Fatalf("took %d jobs when the bucket allows one, wait %v", len(res.Claimed), res.RateWait)
	}
	// Three starts at 0s, 0s and 10s of a bucket of 2 at once and one per
	// 10s: its TAT is 30s, and it allows the next start at 20s.
	if tat, err := b.RateTAT(context.Background(), "r", ""); err != nil || !tat.Equal(clk.Now().Add(20*time.Second)) {
		t.Fatalf("RateTAT = %v, %v; want %v", tat, err, clk.Now().Add(20*time.Second))
	}
	if tat, err := b.RateTAT(context.Background(), "r", "other"); err != nil || !tat.IsZero() {
		t.Fatalf("RateTAT of a key never limited = %v, %v; want zero", tat, err)
	}
	// The remote side asks to slow down for a minute.
	if err := a.PauseRate(context.Background(), "r", "", l.PauseTAT(clk.Now().Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	if res := rateClaim(t, a, "A", clk.Now(), rc); len(res.Claimed) != 0 || !res.RateWait.Equal(clk.Now().Add(30*time.Second)) {
		t.Fatalf("paused bucket gave %d starts, wait %v; want none until the pause ends", len(res.Claimed), res.RateWait)
	}
	clk.Advance(30 * time.Second)
	if res := rateClaim(t, a, "A", clk.Now(), rc); len(res.Claimed) != 1 {
		t.Fatalf("took %d jobs when the pause ended, want 1 (no burst right after a pause)", len(res.Claimed))
	}
	if j := mustJob(t, a, "free"); j.State != store.StatePending {
		t.Errorf("a rated claim took a job of another type: %s", j.State)
	}
	if j := mustJob(t, a, "v2"); j.State != store.StatePending {
		t.Errorf("a rated claim took a job of a version it does not run: %s", j.State)
	}
	// A bucket is never faster than its limit, however much time passes:
	// full again, it gives Burst.
	clk.Advance(time.Hour)
	if res := rateClaim(t, a, "A", clk.Now(), rc); len(res.Claimed) != 2 || !res.RateWait.IsZero() {
		t.Fatalf("full bucket took %d of the last 2 jobs, wait %v; want both, no wait", len(res.Claimed), res.RateWait)
	}
	// Full buckets are purged: the bucket of the last claim is not.
	clk.Advance(time.Second)
	if _, _, err := purge(context.Background(), a, clk.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if tat, err := a.RateTAT(context.Background(), "r", ""); err != nil || tat.IsZero() {
		t.Fatalf("RateTAT after a purge 1s after the claim = %v, %v; want the bucket kept", tat, err)
	}
	clk.Advance(time.Minute)
	if _, _, err := purge(context.Background(), a, clk.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if tat, err := a.RateTAT(context.Background(), "r", ""); err != nil || !tat.IsZero() {
		t.Fatalf("RateTAT after a purge of the full bucket = %v, %v; want no row", tat, err)
	}
}

// testRateLimitPerKey: a keyed limit gives each key its own bucket: a key
// at its limit holds back its own jobs only, and the claim goes past them
// to other keys' jobs, in claim order.
func testRateLimitPerKey(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	for i, c := range []string{"a", "a", "a", "b", "a", "b"} {
		mustEnqueue(t, q, store.NewJob{Type: "r", Key: fmt.Sprint(c, i), Payload: json.RawMessage(`{"customer":"` + c + `"}`)})
	}
	key := func(_ int64, p json.RawMessage) (string, error) {
		var v struct{ Customer string }
		json.Unmarshal(p, &v)
		return v.Customer, nil
	}
	rc := store.RatedClaim{Type: "r", Limit: store.RateLimit{Every: time.Second, Burst: 1, Key: key}, Room: 10}
	res := rateClaim(t, q, "A", clk.Now(), rc)
	var got []string
	for _, j := range res.Claimed {
		got = append(got, j.Key)
	}
	if fmt.Sprint(got) != "[a0 b3]" || !res.RateWait.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("claimed %v, wait %v; want [a0 b3], the first job of each key, wait 1s", got, res.RateWait)
	}
	clk.Advance(time.Second)
	res = rateClaim(t, q, "A", clk.Now(), rc)
	got = got[:0]
	for _, j := range res.Claimed {
		got = append(got, j.Key)
	}
	if fmt.Sprint(got) != "[a1 b5]" {
		t.Fatalf("claimed %v a second later, want [a1 b5]", got)
	}
	// Room bounds the claim; a bucket that allowed but found no room is
	// not spent.
	clk.Advance(time.Second)
	res = rateClaim(t, q, "A", clk.Now(), store.RatedClaim{Type: "r", Limit: rc.Limit, Room: 0})
	if len(res.Claimed) != 0 {
		t.Fatalf("claim without room took %d", len(res.Claimed))
	}
	if res := rateClaim(t, q, "A", clk.Now(), rc); len(res.Claimed) != 1 || res.Claimed[0].Key != "a2" {
		t.Fatalf("claimed %d jobs, want a2", len(res.Claimed))
	}
}

// testRateLimitKeyFails: a job whose key the limit's Key cannot give (an
// error: in a pool, a key function that panicked) has no bucket: the claim
// takes it within its room without spending a start, and the other jobs
// are limited by their keys as before.
func testRateLimitKeyFails(t *testing.T, su *suite) {
	t.Parallel()
	q, clk := su.open(t)
	for i, c := range []string{"a", "bad", "a", "bad", "b"} {
		mustEnqueue(t, q, store.NewJob{Type: "r", Key: fmt.Sprint(c, i), Payload: json.RawMessage(`{"customer":"` + c + `"}`)})
	}
	asked := map[int64]int{}
	key := func(id int64, p json.RawMessage) (string, error) {
		asked[id]++
		var v struct{ Customer string }
		json.Unmarshal(p, &v)
		if v.Customer == "bad" {
			return "", errors.New("no key")
		}
		return v.Customer, nil
	}
	rc := store.RatedClaim{Type: "r", Limit: store.RateLimit{Every: time.Hour, Burst: 1, Key: key}, Room: 3}
	res := rateClaim(t, q, "A", clk.Now(), rc)
	var got []string
	for _, j := range res.Claimed {
		got = append(got, j.Key)
	}
	if fmt.Sprint(got) != "[a0 bad1 bad3]" || !res.RateWait.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("claimed %v, wait %v; want [a0 bad1 bad3] within the room of 3, wait 1h", got, res.RateWait)
	}
	for id, n := range asked {
		if n != 1 {
			t.Errorf("Key asked %d times for job %d in one claim", n, id)
		}
	}
	if tat, err := q.RateTAT(context.Background(), "r", ""); err != nil || !tat.IsZero() {
		t.Errorf("RateTAT of the empty key = %v, %v; want no bucket spent for the jobs without a key", tat, err)
	}
	res = rateClaim(t, q, "A", clk.Now(), rc)
	got = got[:0]
	for _, j := range res.Claimed {
		got = append(got, j.Key)
	}
	if fmt.Sprint(got) != "[b4]" {
		t.Fatalf("claimed %v next, want [b4]: a2 waits for its bucket", got)
	}
}
