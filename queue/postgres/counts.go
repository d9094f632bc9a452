package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// countSlots is how many rows each (type, state) count is spread over, so
// concurrent writers rarely wait on one row.
const countSlots = 16

// writeCountsSQL adds a transaction's changes to one slot, in the order given
// (store.CountDeltas.Sorted).
const writeCountsSQL = `INSERT INTO job_counts (type, state, slot, n)
SELECT d.type, d.state, $4, d.n
FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS d(type, state, n, o)
ORDER BY d.o
ON CONFLICT (type, state, slot) DO UPDATE SET n = job_counts.n + excluded.n`

// writeCounts writes d to a random slot. It must be the transaction's last
// write, so count rows are held only while it commits.
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

func queueCounts(b *pgx.Batch, d store.CountDeltas) {
	if args := countsArgs(d); args != nil {
		b.Queue(writeCountsSQL, args...)
	}
}

// countsArgs returns writeCountsSQL's arguments for d, nil for no change.
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

const countsSQL = `SELECT state, type, sum(n)::bigint FROM job_counts GROUP BY state, type HAVING sum(n) != 0`
