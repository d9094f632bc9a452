package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// SkipSummary implements store.ScheduleViews.SkipSummary in one round trip,
// as -status makes one per schedule.
func (s *Store) SkipSummary(ctx context.Context, schedule string, since time.Time) (store.SkipSummary, error) {
	var sum store.SkipSummary
	b := &pgx.Batch{}
	b.Queue(skipCountSQL, schedule, ts(since), store.MaxSkipCount)
	b.Queue(lastSkipSQL, schedule)
	err := readBatch(s.pool.SendBatch(ctx, b), func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&sum.Count); err != nil {
			return err
		}
		last, err := store.ScanSkip(row{br.QueryRow()})
		switch {
		case err == store.ErrNoRows:
		case err != nil:
			return err
		default:
			sum.Last = &last
		}
		return nil
	})
	if err != nil {
		return store.SkipSummary{}, fmt.Errorf("skips of %s: %w", schedule, err)
	}
	return sum, nil
}
