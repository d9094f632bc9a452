package cli

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestDeadListsNewestFirstAsJobsDoes: -dead lists the dead jobs in the
// order of -jobs -state dead, newest (highest id) first, in text and JSON.
func TestDeadListsNewestFirstAsJobsDoes(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "s.db")
	q, err := engine.Open(t.Context(), db, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := range 3 {
		want = append(want, makeDead(t, q, "dead-"+strconv.Itoa(i)))
	}
	q.Close()
	slices.Reverse(want)

	config := "[tasks.t]\ncommand = [\"true\"]\n"
	idsOf := func(args ...string) []int64 {
		t.Helper()
		out, errs, code := runInProcess(t, config, append([]string{"-db", db}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		var ids []int64
		if args[len(args)-1] == "-json" {
			var vs []jobView
			if err := json.Unmarshal([]byte(out), &vs); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			for _, v := range vs {
				ids = append(ids, v.ID)
			}
			return ids
		}
		for _, m := range regexp.MustCompile(`(?m)^(\d+) `).FindAllStringSubmatch(out, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			ids = append(ids, id)
		}
		return ids
	}
	for _, args := range [][]string{{"-dead"}, {"-dead", "-json"}, {"-jobs", "-state", "dead"}, {"-jobs", "-state", "dead", "-json"}} {
		if got := idsOf(args...); !slices.Equal(got, want) {
			t.Errorf("%v lists jobs %v, want %v (newest first)", args, got, want)
		}
	}
}

// makeDead enqueues a job of task t under key, claims it and records its
// only attempt dead, and returns its id.
func makeDead(t *testing.T, q *queue.Client, key string) int64 {
	t.Helper()
	return makeDeadJob(t, q, queue.NewJob{Type: "t", Key: key, MaxAttempts: 1})
}

// makeDeadJob enqueues j, claims it and records its only attempt dead,
// and returns its id. It must be the only ready job of its type.
func makeDeadJob(t *testing.T, q *queue.Client, j queue.NewJob) int64 {
	t.Helper()
	key := j.Key
	e, err := q.Enqueue(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	now := q.Clock().Now()
	r, err := q.Engine().CommitPoolTx(t.Context(), store.PoolTx{Owner: "node1-pool", Now: now, Claim: &store.Claim{Lease: time.Hour, N: 1, Types: []string{j.Type}}})
	if err != nil || len(r.Claimed) != 1 || r.Claimed[0].ID != e.ID {
		t.Fatalf("claim %s: %+v, %v", key, r.Claimed, err)
	}
	res := store.Result{Job: r.Claimed[0], Worker: "node1-pool/w1", Outcome: queue.OutcomeDead, Error: "failed",
		Started: now, Finished: now.Add(time.Second)}
	if r, err := q.Engine().CommitPoolTx(t.Context(), store.PoolTx{Owner: "node1-pool", Now: now, Results: []store.Result{res}}); err != nil || !r.Fenced[0] {
		t.Fatalf("result %s: %+v, %v", key, r, err)
	}
	return e.ID
}
