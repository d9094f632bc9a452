package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// countSlots is how many rows each (type, state) count is spread over.
const countSlots = 16

// writeCountsSQL adds a transaction's changes to the counts of one slot,
// in the order given: by type, then state (see store.CountDeltas.Sorted).
const writeCountsSQL = `INSERT INTO job_counts (type, state, slot, n)
SELECT d.type, d.state, $4, d.n
FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS d(type, state, n, o)
ORDER BY d.o
ON CONFLICT (type, state, slot) DO UPDATE SET n = job_counts.n + excluded.n`

// writeCounts writes d in tx, in one statement, to a slot picked at
// random. It must be the transaction's last write to the jobs: the count
// rows are then held only while the transaction commits.
func writeCounts(ctx context.Context, tx querier, d store.CountDeltas) error {
	args := countsArgs(d)
	if args == nil {
		return nil
	}
	if _, err := tx.Exec(ctx, writeCountsSQL, args...); err != nil {
		return fmt.Errorf("count jobs: %w", err)
	}
	return nil
}

// queueCounts queues in b the statement of writeCounts, if d changes a
// count, and reports whether it did.
func queueCounts(b *pgx.Batch, d store.CountDeltas) bool {
	args := countsArgs(d)
	if args == nil {
		return false
	}
	b.Queue(writeCountsSQL, args...)
	return true
}

// countsArgs returns the arguments of writeCountsSQL for d, in the order of
// d.Sorted, to a slot picked at random; nil if d changes no count.
func countsArgs(d store.CountDeltas) []any {
	ds := d.Sorted()
	if len(ds) == 0 {
		return nil
	}
	types, states, ns := make([]string, len(ds)), make([]string, len(ds)), make([]int64, len(ds))
	for i, c := range ds {
		types[i], states[i], ns[i] = c.Type, string(c.State), c.N
	}
	return []any{types, states, ns, rand.IntN(countSlots)}
}

// inTx runs fn in a transaction and writes the count changes fn records in
// d before the commit.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx, d store.CountDeltas) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		d := store.CountDeltas{}
		if err := fn(tx, d); err != nil {
			return err
		}
		return writeCounts(ctx, tx, d)
	})
}

// moveTypes reads the type of each row of rows and records the rows as
// moved from one state to another, or deleted when to is empty; it returns
// how many, and closes rows.
func moveTypes(rows pgx.Rows, err error, d store.CountDeltas, from, to store.State) (int64, error) {
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var typ string
		if err := rows.Scan(&typ); err != nil {
			return n, err
		}
		if to == "" {
			d.Add(typ, from, -1)
		} else {
			d.Move(typ, from, to, 1)
		}
		n++
	}
	return n, rows.Err()
}

// countsSQL sums the slots of the counts.
const countsSQL = `SELECT state, type, sum(n)::bigint FROM job_counts GROUP BY state, type HAVING sum(n) != 0`
