package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue/store"
)

// TestMigrationFillsCounts: a file written before job_counts existed gets
// its counts from its rows when it is opened, and Stats reads them; a
// read-only open of such a file, which migrates nothing, counts the rows.
func TestMigrationFillsCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	// The schema before job_counts, with two pending jobs of a and a
	// cancelled one of b.
	if err := CreateAtVersion(ctx, path, 7); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at)
		VALUES ('1', 'a', 'pending', 1, 0, 0), ('2', 'a', 'pending', 1, 0, 0), ('3', 'b', 'cancelled', 1, 0, 0)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	ro, err := Open(ctx, path, Config{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ro.Stats(ctx)
	ro.Close()
	if err != nil || st.Counts[store.StatePending]["a"] != 2 || st.Counts[store.StateCancelled]["b"] != 1 {
		t.Fatalf("read-only Stats of the old schema = %v, %v; want 2 pending a and 1 cancelled b", st.Counts, err)
	}

	q, err := Open(ctx, path, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var n int
	if err := q.r.QueryRowContext(ctx, "SELECT coalesce(sum(n), 0) FROM job_counts").Scan(&n); err != nil || n != 3 {
		t.Fatalf("job_counts after the migration holds %d jobs, %v; want 3", n, err)
	}
	if _, err := q.Enqueue(ctx, store.NewJob{Type: "a", Key: "4"}); err != nil {
		t.Fatal(err)
	}
	st, err = q.Stats(ctx)
	if err != nil || st.Counts[store.StatePending]["a"] != 3 || st.Counts[store.StateCancelled]["b"] != 1 || st.Total[store.StatePending] != 3 {
		t.Fatalf("Stats after the migration = %v, %v; want 3 pending a and 1 cancelled b", st.Counts, err)
	}
}

// TestCountMark: a small transaction of enqueues (a single enqueue among
// them) writes no count; Stats and Handlers count its jobs as pending
// through the jobs past the count mark, whatever their state is since, and
// so does a read-only store. A purge counts the jobs past the mark and
// moves it before it deletes any. The enqueue that would leave
// maxUncounted jobs past the mark counts them all and moves it; and so
// does a transaction of maxUncounted jobs.
func TestCountMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	q, err := Open(ctx, filepath.Join(t.TempDir(), "q.db"), Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	mark := func() (mark, last int64) {
		t.Helper()
		if err := q.r.QueryRowContext(ctx, countMarkSQL).Scan(&mark, &last); err != nil {
			t.Fatal(err)
		}
		return mark, last
	}
	// check compares Stats, a read-only store's Stats, job_counts with the
	// jobs past the mark, and Handlers' view of the pending jobs, with the
	// rows.
	ro, err := Open(ctx, q.Name(), Config{Clock: clk, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	check := func(step string) {
		t.Helper()
		want, err := q.CountJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Store{q, ro} {
			st, err := s.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, state := range []store.State{store.StatePending, store.StateRunning, store.StateDone} {
				for _, typ := range []string{"a", "b"} {
					if got := st.Counts[state][typ]; got != want[state][typ] {
						t.Errorf("%s: Stats counts %d %s jobs of %s, the rows %d", step, got, state, typ, want[state][typ])
					}
				}
			}
		}
		h, err := q.Unhandled(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var waiting int
		for _, w := range h.Waiting {
			waiting += w.Ready
		}
		if pending := want[store.StatePending]["a"] + want[store.StatePending]["b"]; waiting != pending {
			t.Errorf("%s: Handlers sees %d ready jobs waiting for a handler, the rows %d pending", step, waiting, pending)
		}
	}
	enqueue := func(typ, key string) {
		t.Helper()
		if _, err := q.Enqueue(ctx, NewJob{Type: typ, Key: key}); err != nil {
			t.Fatal(err)
		}
	}

	enqueue("a", "a1")
	enqueue("a", "a2")
	enqueue("b", "b1")
	if m, last := mark(); m != 0 || last != 3 {
		t.Fatalf("mark %d with 3 jobs enqueued one by one, last id %d; want 0 and 3", m, last)
	}
	check("single enqueues")
	// Jobs past the mark change state: they count as pending through the
	// mark and as moved through job_counts.
	finishJob(t, q, "a1", OutcomeDone, "")
	check("a job past the mark done")

	// A small transaction leaves its jobs past the mark too.
	if _, err := q.EnqueueBatch(ctx, []NewJob{{Type: "b", Key: "b2"}, {Type: "a", Key: "a1"}}); err != nil {
		t.Fatal(err)
	}
	if m, last := mark(); m != 0 || last != 4 {
		t.Fatalf("mark %d after a small batch, last id %d; want 0 and 4", m, last)
	}
	check("a small batch")

	// Done jobs past the mark, purged: the purge counts them first.
	enqueue("a", "a3")
	enqueue("b", "b3")
	enqueue("a", "newest")
	finishJob(t, q, "a3", OutcomeDone, "")
	finishJob(t, q, "b3", OutcomeDone, "")
	clk.Advance(8 * 24 * time.Hour)
	if rep, err := q.Maintain(ctx, 7*24*time.Hour); err != nil || rep.Purged != 3 {
		t.Fatalf("Maintain = %+v, %v; want a1, a3 and b3 purged", rep, err)
	}
	if m, last := mark(); m != last {
		t.Fatalf("mark %d after a purge, last id %d; want them equal", m, last)
	}
	check("a purge of jobs past the mark")

	// Single enqueues up to maxUncounted jobs past the mark.
	m0, _ := mark()
	for i := range maxUncounted - 1 {
		enqueue("b", fmt.Sprint("many", i))
	}
	if m, last := mark(); m != m0 || last != m0+maxUncounted-1 {
		t.Fatalf("mark %d after %d single enqueues from %d, last id %d; want it unmoved", m, maxUncounted-1, m0, last)
	}
	enqueue("b", "one more")
	if m, last := mark(); m != last || last != m0+maxUncounted {
		t.Fatalf("mark %d after %d single enqueues, last id %d; want the last", m, maxUncounted, last)
	}
	check("many single enqueues")

	// A transaction of maxUncounted jobs counts them.
	enqueue("a", "past")
	batch := make([]NewJob, maxUncounted)
	for i := range batch {
		batch[i] = NewJob{Type: "a", Key: fmt.Sprint("batch", i)}
	}
	if _, err := q.EnqueueBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if m, last := mark(); m != last {
		t.Fatalf("mark %d after a batch of %d, last id %d; want the last", m, maxUncounted, last)
	}
	check("a large batch")
}

// TestCountsOfAFileBeforeTheMark: a read-only store on a file older than
// the count mark, whose trigger counted every insert, reads job_counts
// alone; opened to write, the file's counts and mark carry on from there.
func TestCountsOfAFileBeforeTheMark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "q.db")
	if err := CreateAtVersion(ctx, path, 13); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dsn(path, 5*time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `INSERT INTO jobs (key, type, state, max_attempts, run_at, created_at)
		VALUES ('1', 'a', 'pending', 1, 0, 0), ('2', 'a', 'pending', 1, 0, 0), ('3', 'b', 'pending', 1, 0, 0)`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []Config{{ReadOnly: true}, {}} {
		s, err := Open(ctx, path, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.ReadOnly {
			if _, err := s.Enqueue(ctx, NewJob{Type: "b", Key: "4"}); err != nil {
				t.Fatal(err)
			}
		}
		st, err := s.Stats(ctx)
		s.Close()
		wantB := 1
		if !cfg.ReadOnly {
			wantB = 2
		}
		if err != nil || st.Counts[store.StatePending]["a"] != 2 || st.Counts[store.StatePending]["b"] != wantB {
			t.Fatalf("Stats (read-only %v) = %v, %v; want 2 pending a and %d pending b", cfg.ReadOnly, st.Counts, err, wantB)
		}
	}
}
