package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// failAfter bounds every wait of these tests. Reaching it fails the test;
// it is no claim about speed, and minutes long so that a loaded machine
// passes.
const failAfter = 3 * time.Minute

// newTestQueue opens a queue on a fresh file in t.TempDir() with a fake clock.
func newTestQueue(t testing.TB) (*Store, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(t0)
	q, err := Open(context.Background(), filepath.Join(t.TempDir(), "q.db"), Config{Clock: clk})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { q.Close() })
	return q, clk
}

// waitFor returns the next value from ch, failing the test after a deadline
// that is a failure bound, not a synchronisation point.
func waitFor[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failAfter):
		t.Fatal("timed out waiting")
	}
	var zero T
	return zero
}

// eventually polls cond until it holds, failing after a deadline. It is for
// effects that have no channel to wait on, such as rows written by another
// goroutine's transaction.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(failAfter)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling interval of a deadline loop, not a sync point
	}
}

func mustEnqueue(t testing.TB, q *Store, j NewJob) Enqueued {
	t.Helper()
	res, err := q.Enqueue(context.Background(), j)
	if err != nil {
		t.Fatalf("Enqueue(%+v): %v", j, err)
	}
	return res
}

func mustJob(t testing.TB, q *Store, ref string) *Job {
	t.Helper()
	j, err := jobByRef(context.Background(), q, ref)
	if err != nil {
		t.Fatalf("Job(%s): %v", ref, err)
	}
	return j
}

// jobTypes returns the types of q's jobs, for a claim that
// takes jobs of every type.
func jobTypes(t testing.TB, q *Store) []string {
	t.Helper()
	var types string
	if err := q.r.QueryRow("SELECT json_group_array(DISTINCT type) FROM jobs").Scan(&types); err != nil {
		t.Fatal(err)
	}
	var out []string
	if err := json.Unmarshal([]byte(types), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// jobByRef looks a job up by id when ref is a number and a job has that
// id, else by key, as the command line does.
func jobByRef(ctx context.Context, q *Store, ref string) (*Job, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		j, err := q.Job(ctx, id)
		if !errors.Is(err, ErrNotFound) {
			return j, err
		}
	}
	return q.JobByKey(ctx, ref)
}

// The contract's vocabulary under the names the tests were written with.
type (
	State          = store.State
	NewJob         = store.NewJob
	Job            = store.Job
	Attempt        = store.Attempt
	Outcome        = store.Outcome
	Skip           = store.Skip
	Enqueued       = store.Enqueued
	Advance        = store.Advance
	AdvanceResult  = store.AdvanceResult
	Cursor         = store.Cursor
	Stats          = store.Stats
	Filter         = store.Filter
	InstantOutcome = store.InstantOutcome
	Process        = store.Process
	StoredConfig   = store.StoredConfig
	result         = store.Result
)

const (
	StatePending        = store.StatePending
	StateRunning        = store.StateRunning
	StateDone           = store.StateDone
	StateDead           = store.StateDead
	StateCancelled      = store.StateCancelled
	OutcomeDone         = store.OutcomeDone
	OutcomeRetry        = store.OutcomeRetry
	OutcomeDead         = store.OutcomeDead
	OutcomeReleased     = store.OutcomeReleased
	OutcomeLeaseExpired = store.OutcomeLeaseExpired
	OutcomeStale        = store.OutcomeStale
	OutcomeCancelled    = store.OutcomeCancelled
	SkipMisfire         = store.SkipMisfire
	SkipOverlap         = store.SkipOverlap
	SkipPaused          = store.SkipPaused
	SkipDST             = store.SkipDST
	MaxOutput           = store.MaxOutput
	MaxList             = store.MaxList
	ListScanBound       = store.ListScanBound
	MaxSkipCount        = store.MaxSkipCount
	AliveWithin         = store.AliveWithin
	DefaultMaxAttempts  = store.DefaultMaxAttempts
)

var (
	ErrNotFound     = store.ErrNotFound
	ErrCursorMoved  = store.ErrCursorMoved
	ErrSchemaTooNew = store.ErrSchemaTooNew
)
