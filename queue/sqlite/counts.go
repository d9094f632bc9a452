package sqlite

import (
	"context"
	"fmt"

	"github.com/scheduler-run/scheduler/queue/store"
)

// countSQL adds a transaction's change to one count of job_counts.
const countSQL = `INSERT INTO job_counts (type, state, n) VALUES (?1, ?2, ?3)
ON CONFLICT (type, state) DO UPDATE SET n = n + excluded.n`

// readMark reads the count mark (see migration 0014) and the largest job
// id, once: a transaction calls it before its first insert of jobs. A
// rollback to a savepoint (a failed call of a group of enqueues) leaves
// what it read true: it read before any insert.
func (t txn) readMark(ctx context.Context) error {
	if t.tail.read {
		return nil
	}
	if err := t.queryRow(ctx, countMarkSQL).Scan(&t.tail.mark, &t.tail.end); err != nil {
		return fmt.Errorf("read the count mark: %w", err)
	}
	t.tail.read = true
	return nil
}

// countInserted records a job of type typ the transaction inserted, after
// readMark. Whether it is counted in job_counts or left past the mark,
// writeCounts decides.
func (t txn) countInserted(typ string) {
	t.tail.inserted[typ]++
	t.tail.n++
}

// countPastMark counts the jobs past the count mark as pending in the
// transaction's counts now, and has writeCounts move the mark: a
// transaction that deletes jobs calls it first, so that none it deletes
// is past the mark.
func (t txn) countPastMark(ctx context.Context) error {
	if err := t.readMark(ctx); err != nil || t.tail.counted {
		return err
	}
	if t.tail.end > t.tail.mark {
		rows, err := t.query(ctx, tailCountsSQL, t.tail.mark, t.tail.end)
		if err != nil {
			return fmt.Errorf("count jobs past the mark: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var typ string
			var n int64
			if err := rows.Scan(&typ, &n); err != nil {
				return fmt.Errorf("count jobs past the mark: %w", err)
			}
			t.counts.Add(typ, store.StatePending, n)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("count jobs past the mark: %w", err)
		}
	}
	t.tail.counted = true
	return nil
}

// countTail is what a transaction knows of the jobs past the count mark.
type countTail struct {
	read      bool
	mark, end int64 // the mark and the largest job id, read by readMark
	// inserted counts the transaction's own inserts by type, n in all. A
	// group of enqueues restores them when it rolls back a call.
	inserted map[string]int64
	n        int64
	counted  bool // countPastMark counted the jobs past the mark
}

// maxUncounted bounds the jobs past the count mark, which every read of
// the counts walks: a transaction that inserts jobs leaves its own past it
// (no count to write, which is most of what a small one would write) until
// the jobs past it would reach this many; then it counts them all and
// moves the mark.
const maxUncounted = 100

const (
	// countMarkSQL reads the count mark and the largest job id.
	countMarkSQL = `SELECT last_id, (SELECT coalesce(max(id), 0) FROM jobs) FROM job_counts_mark`
	// tailCountsSQL counts the jobs past the mark up to an id by type,
	// walking the table's rowids.
	tailCountsSQL    = `SELECT type, count(*) FROM jobs WHERE id > ?1 AND id <= ?2 GROUP BY type`
	moveCountMarkSQL = `UPDATE job_counts_mark SET last_id = (SELECT coalesce(max(id), 0) FROM jobs)`
)

// writeCounts writes the transaction's count changes, one statement per
// (type, state) that changed: a pool's transaction of many jobs writes a few
// rows, a tick of thousands of jobs one per type. A transaction that
// inserted jobs counts them, with those past the mark before it, and moves
// the mark past them all when they would be maxUncounted or more (their
// ids follow the largest before it), or when countPastMark counted those.
func (t txn) writeCounts(ctx context.Context) error {
	if tl := t.tail; tl.read && (tl.counted || tl.n > 0 && tl.end+tl.n-tl.mark >= maxUncounted) {
		if err := t.countPastMark(ctx); err != nil {
			return err
		}
		for typ, n := range tl.inserted {
			t.counts.Add(typ, store.StatePending, n)
		}
		if _, err := t.exec(ctx, moveCountMarkSQL); err != nil {
			return fmt.Errorf("move the count mark: %w", err)
		}
	}
	if len(t.counts) == 0 {
		return nil
	}
	for _, d := range t.counts.Sorted() {
		if _, err := t.exec(ctx, countSQL, d.Type, string(d.State), d.N); err != nil {
			return fmt.Errorf("count jobs: %w", err)
		}
	}
	return nil
}

// countsSQL reads the job counts, those past the count mark with them. A
// count whose jobs all moved on stays as a row of 0.
const countsSQL = `SELECT state, type, n FROM job_counts_now WHERE n != 0`
