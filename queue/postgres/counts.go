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
// count.
func queueCounts(b *pgx.Batch, d store.CountDeltas) {
	if args := countsArgs(d); args != nil {
		b.Queue(writeCountsSQL, args...)
	}
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

// countsSQL sums the slots of the counts.
const countsSQL = `SELECT state, type, sum(n)::bigint FROM job_counts GROUP BY state, type HAVING sum(n) != 0`
