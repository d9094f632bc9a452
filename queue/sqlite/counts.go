package sqlite

import (
	"context"
	"fmt"

	"github.com/scheduler-run/scheduler/queue/store"
)

// countSQL adds a transaction's change to one job_counts row.
const countSQL = `INSERT INTO job_counts (type, state, n) VALUES (?1, ?2, ?3)
ON CONFLICT (type, state) DO UPDATE SET n = n + excluded.n`

// readMark reads the count mark (see migration 0014) and the largest job id
// once, before the first insert, so a savepoint rollback leaves them true.
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

// countInserted records an inserted job of typ, after readMark.
func (t txn) countInserted(typ string) {
	t.tail.inserted[typ]++
	t.tail.n++
}

// countPastMark counts the jobs past the mark as pending and has writeCounts
// move the mark. A deleting transaction calls it first, so it deletes none
// past the mark.
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

type countTail struct {
	read      bool
	mark, end int64            // the mark and the largest job id, read by readMark
	inserted  map[string]int64 // own inserts by type, n in all; restored at a savepoint rollback
	n         int64
	counted   bool // countPastMark counted the jobs past the mark
}

// maxUncounted bounds the jobs past the count mark, which every read of the
// counts walks: a transaction leaves its inserts past it, sparing a small one
// most of its writes, until they would reach this many.
const maxUncounted = 100

const (
	// countMarkSQL reads the count mark and the largest job id.
	countMarkSQL = `SELECT last_id, (SELECT coalesce(max(id), 0) FROM jobs) FROM job_counts_mark`
	// tailCountsSQL counts jobs past the mark up to an id, by type.
	tailCountsSQL    = `SELECT type, count(*) FROM jobs WHERE id > ?1 AND id <= ?2 GROUP BY type`
	moveCountMarkSQL = `UPDATE job_counts_mark SET last_id = (SELECT coalesce(max(id), 0) FROM jobs)`
)

// writeCounts writes the count changes, one statement per changed (type,
// state). Inserts stay past the mark, unless they would reach maxUncounted or
// countPastMark ran: then they are counted, with those past the mark, and the
// mark moves past all.
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

// countsSQL reads the job counts, those past the mark included; a count whose
// jobs all moved on stays as a 0 row.
const countsSQL = `SELECT state, type, n FROM job_counts_now WHERE n != 0`
