package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// lockCursorsSQL locks an AdvanceBatch's cursors by name, so two nodes
// advancing the same schedules wait instead of deadlocking.
const lockCursorsSQL = `SELECT schedule FROM cursors WHERE schedule = ANY($1) ORDER BY schedule FOR UPDATE`

// moveCursorsSQL is many cursors' compare-and-set, returning those moved.
const moveCursorsSQL = `UPDATE cursors SET at = c.to_at, updated_at = $5
FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[], $4::bool[]) AS c(name, from_at, to_at, was_paused)
WHERE cursors.schedule = c.name AND cursors.at = c.from_at AND cursors.paused = c.was_paused
RETURNING cursors.schedule`

func moveCursors(ctx context.Context, tx querier, advs []*store.Advance, now time.Time) (map[string]bool, error) {
	names := make([]string, len(advs))
	froms, tos := make([]time.Time, len(advs)), make([]time.Time, len(advs))
	paused := make([]bool, len(advs))
	for n, a := range advs {
		names[n], froms[n], tos[n], paused[n] = a.Schedule, ts(a.From), ts(a.To), a.Paused
	}
	rows, err := tx.Query(ctx, moveCursorsSQL, names, froms, tos, paused, now)
	if err != nil {
		return nil, err
	}
	moved, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(moved))
	for _, m := range moved {
		out[m] = true
	}
	return out, nil
}

const insertSkipsSQL = `INSERT INTO skips (schedule, item, scheduled_at, reason, recorded_at)
SELECT * , $5::timestamptz FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[])
ON CONFLICT DO NOTHING`

// insertSkips records skips in one statement.
func insertSkips(ctx context.Context, tx querier, skips []store.Skip, now time.Time) error {
	if len(skips) == 0 {
		return nil
	}
	scheds, items, ats, reasons := make([]string, len(skips)), make([]string, len(skips)), make([]time.Time, len(skips)), make([]string, len(skips))
	for i, sk := range skips {
		scheds[i], items[i], ats[i], reasons[i] = sk.Schedule, sk.Item, ts(sk.ScheduledAt), string(sk.Reason)
	}
	if _, err := tx.Exec(ctx, insertSkipsSQL, scheds, items, ats, reasons, now); err != nil {
		return fmt.Errorf("record skips: %w", err)
	}
	return nil
}
