package store

import (
	"context"
	"fmt"
	"time"
)

// Maintain implements PoolProtocol.Maintain and logs the counts. Skipped
// while another process maintains is an efficiency only: concurrent reclaims
// and purges are correct.
func (e *Base) Maintain(ctx context.Context, retain time.Duration) (MaintenanceReport, error) {
	var rep MaintenanceReport
	unlock, ok, err := e.b.LockMaintenance(ctx)
	if err != nil {
		return rep, fmt.Errorf("maintenance lock: %w", err)
	}
	if !ok {
		rep.Skipped = true
		return rep, nil
	}
	defer unlock()
	if rep.Reclaimed, err = e.reclaim(ctx); err != nil {
		return rep, err
	}
	if rep.Purged, rep.Skips, err = e.purgeBefore(ctx, e.clock.Now().Add(-retain)); err != nil {
		return rep, err
	}
	e.log.InfoContext(ctx, "maintenance done", "component", "maintenance",
		"reclaimed", rep.Reclaimed, "purged", rep.Purged, "skips_purged", rep.Skips)
	return rep, nil
}

// reclaim takes back expired leases and records the lost attempts.
func (e *Base) reclaim(ctx context.Context) (int, error) {
	var rs []Reclaimed
	err := e.b.InTx(ctx, false, func(tx Tx) error {
		now := e.clock.Now()
		expired, err := Expired(ctx, e, tx, now)
		if err != nil {
			return fmt.Errorf("reclaim: %w", err)
		}
		rs, err = e.b.Reclaim(ctx, tx, now, expired)
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, r := range rs {
		e.log.WarnContext(ctx, "job lease reclaimed", "component", "maintenance",
			"job_id", r.ID, "attempt", r.Attempt, "owner", r.Owner, "dead", r.Dead)
	}
	if len(rs) > 0 {
		Wake(e)
	}
	return len(rs), nil
}

// purgeBefore purges what is older than before in batches of one transaction
// each, so other writers interleave. Dead, pending and running jobs stay. A
// purged job's key moves to the used keys in the deleting transaction, so an
// enqueue under it still inserts nothing.
func (e *Base) purgeBefore(ctx context.Context, before time.Time) (jobs, skips int64, err error) {
	if jobs, err = e.purgeBatches(ctx, func(tx Tx) (int64, error) {
		return e.b.PurgeDone(ctx, tx, before, e.purge.Batch)
	}); err != nil {
		return jobs, skips, fmt.Errorf("purge done jobs: %w", err)
	}
	if skips, err = e.purgeBatches(ctx, func(tx Tx) (int64, error) {
		return tx.Exec(ctx, e.q.PurgeSkips, before, e.purge.Batch)
	}); err != nil {
		return jobs, skips, fmt.Errorf("purge skips: %w", err)
	}
	if _, err = e.purgeBatches(ctx, func(tx Tx) (int64, error) {
		return tx.Exec(ctx, e.q.PurgeAlarms, before, e.purge.Batch)
	}); err != nil {
		return jobs, skips, fmt.Errorf("purge alarms: %w", err)
	}
	if _, err = e.purgeBatches(ctx, func(tx Tx) (int64, error) {
		return tx.Exec(ctx, e.q.Incidents.PurgeIncidents, before, e.purge.Batch)
	}); err != nil {
		return jobs, skips, fmt.Errorf("purge incidents: %w", err)
	}
	if e.q.PurgeChartHours != "" {
		if err := e.b.InTx(ctx, false, func(tx Tx) error {
			_, err := tx.Exec(ctx, e.q.PurgeChartHours, chartHoursBefore(before, e.clock.Now()))
			return err
		}); err != nil {
			return jobs, skips, fmt.Errorf("purge chart hours: %w", err)
		}
	}
	// Full buckets: as if they had no row. Live output left by reclaimed
	// attempts: a few rows at most.
	if err := e.b.InTx(ctx, false, func(tx Tx) error {
		if _, err := tx.Exec(ctx, e.q.PurgeRateLimits, e.clock.Now()); err != nil {
			return err
		}
		if e.q.PurgeLive == "" {
			return nil
		}
		_, err := tx.Exec(ctx, e.q.PurgeLive)
		return err
	}); err != nil {
		return jobs, skips, fmt.Errorf("purge rate limits: %w", err)
	}
	return jobs, skips, e.b.Purged(ctx)
}

// purgeBatches runs batch, a transaction each, resting PurgeConfig.Pause
// between, until one deletes less than a full batch.
func (e *Base) purgeBatches(ctx context.Context, batch func(Tx) (int64, error)) (int64, error) {
	var total int64
	for {
		var n int64
		start := e.clock.Monotonic()
		err := e.b.InTx(ctx, false, func(tx Tx) error {
			var err error
			n, err = batch(tx)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < int64(e.purge.Batch) {
			return total, nil
		}
		if e.purge.Pause > 0 {
			select {
			case <-ctx.Done():
			case <-e.clock.After(max(e.purge.Pause, e.clock.Monotonic()-start)):
			}
		}
	}
}
