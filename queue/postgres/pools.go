package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/queue/store"
)

// presenceSQL records a running pool's row.
const presenceSQL = `INSERT INTO pools (owner, types, pid, host, version, started_at, seen_at, versions, config_sha256, config_at, workers)
VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, $9, $10)
ON CONFLICT (owner) DO UPDATE SET types = excluded.types, versions = excluded.versions, seen_at = excluded.seen_at,
	config_sha256 = excluded.config_sha256, config_at = excluded.config_at, workers = excluded.workers`

const forgetPoolsSQL = `DELETE FROM pools WHERE seen_at < $1`

// queuePresence queues p's statements in b: at the first, forget pools gone
// for PresenceKept; record this one.
func queuePresence(b *pgx.Batch, owner string, p *store.Presence, now time.Time) {
	if p.First {
		b.Queue(forgetPoolsSQL, ts(now.Add(-store.PresenceKept)))
	}
	types := p.Types
	if types == nil {
		types = []string{}
	}
	versions := p.Versions
	if versions == nil {
		versions = store.Versions{}
	}
	pr := p.Process
	var configAt *time.Time // NULL without a config
	if pr.Config != "" && !pr.ConfigAt.IsZero() {
		at := pr.ConfigAt.Truncate(time.Millisecond)
		configAt = &at
	}
	b.Queue(presenceSQL, owner, types, pr.PID, cleanText(pr.Host), cleanText(pr.Version), now, versions, cleanText(pr.Config), configAt, p.Workers)
}

func readPresence(br pgx.BatchResults, p *store.Presence) error {
	if p.First {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("forget old pools: %w", err)
		}
	}
	if _, err := br.Exec(); err != nil {
		return fmt.Errorf("record pool: %w", err)
	}
	return nil
}

// unhandledSQL tells from job_counts whether a pending type has no live pool
// handling it ($1): usually not.
const unhandledSQL = `SELECT EXISTS (
	SELECT type FROM job_counts WHERE state = 'pending' GROUP BY type HAVING sum(n) > 0
	EXCEPT SELECT unnest($1::text[]))`

// versionedSQL tells whether a pending job of another version exists.
const versionedSQL = `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'pending' AND version <> 1)`

// livePoolsSQL reads what the live pools take; livePoolsOldSQL and
// waitingOldSQL serve a read-only schema without job versions.
const (
	livePoolsSQL    = `SELECT types, versions FROM pools WHERE seen_at >= $1`
	livePoolsOldSQL = `SELECT types, '{}'::jsonb FROM pools WHERE seen_at >= $1`
	waitingOldSQL   = `SELECT type, 1, count(*), min(run_at) FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND NOT type = ANY($2)
GROUP BY type ORDER BY type`
)

// waitingSQL counts, by type and version, ready jobs no live pool takes ($2
// to $4, as in claimSQL).
var waitingSQL = `SELECT type, version, count(*), min(run_at) FROM jobs
WHERE state = 'pending' AND run_at <= $1 AND NOT ` + acceptedJobs(2, true) + `
GROUP BY type, version ORDER BY type, version`

// Unhandled implements store.JobViews.Unhandled.
func (s *Store) Unhandled(ctx context.Context) (store.Unhandled, error) {
	return store.FindUnhandled(ctx, unhandledReads{s}, s.now())
}

type unhandledReads struct{ s *Store }

func (u unhandledReads) LivePools(ctx context.Context, since time.Time) ([]store.PoolTypes, error) {
	q := livePoolsSQL
	if u.s.schema.noVersions {
		q = livePoolsOldSQL
	}
	rows, err := u.s.pool.Query(ctx, q, ts(since))
	return store.Collect(store.Read(rows, err), func(r store.Row) (store.PoolTypes, error) {
		var p store.PoolTypes
		err := r.Scan(&p.Types, &p.Versions)
		return p, err
	})
}

// MayWait reads the job counts and, when every pending type is handled, looks
// for pending jobs of other versions. Without counts, yes.
func (u unhandledReads) MayWait(ctx context.Context, handled []string) (bool, error) {
	sc := u.s.schema
	if sc.noCounts {
		return true, nil
	}
	var unhandled, versioned bool
	if err := u.s.pool.QueryRow(ctx, unhandledSQL, handled).Scan(&unhandled); err != nil {
		return false, err
	}
	if !unhandled && !sc.noVersions {
		if err := u.s.pool.QueryRow(ctx, versionedSQL).Scan(&versioned); err != nil {
			return false, err
		}
	}
	return unhandled || versioned, nil
}

func (u unhandledReads) Waiting(ctx context.Context, now time.Time, handled []string, all store.Versions) store.Reading {
	var rows pgx.Rows
	var err error
	if u.s.schema.noVersions {
		rows, err = u.s.pool.Query(ctx, waitingOldSQL, ts(now), handled)
	} else {
		accepted, _ := acceptedArgs(all.Split(handled))
		if len(accepted) == 1 {
			accepted = append(accepted, []string{}, []int32{})
		}
		rows, err = u.s.pool.Query(ctx, waitingSQL, append([]any{ts(now)}, accepted...)...)
	}
	return store.Read(rows, err)
}
