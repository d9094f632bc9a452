package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// presenceSQL records a running pool's row, rewriting one deleted by hand or
// by a pool that took it for gone.
const presenceSQL = `INSERT INTO pools (owner, types, pid, host, version, started_at, seen_at, versions, config_sha256, config_at, workers)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?10)
ON CONFLICT (owner) DO UPDATE SET types = excluded.types, versions = excluded.versions, seen_at = excluded.seen_at,
	config_sha256 = excluded.config_sha256, config_at = excluded.config_at, workers = excluded.workers`

const forgetPoolsSQL = `DELETE FROM pools WHERE seen_at < ?`

// present writes owner's row as p says; a pool's first write also forgets
// pools gone for store.PresenceKept.
func (s *Store) present(ctx context.Context, tx txn, owner string, p *store.Presence, now time.Time) error {
	if p.First {
		if _, err := tx.exec(ctx, forgetPoolsSQL, ms(now.Add(-store.PresenceKept))); err != nil {
			return fmt.Errorf("forget old pools: %w", err)
		}
	}
	pr := p.Process
	if _, err := tx.exec(ctx, presenceSQL, owner, s.types.json(p.Types), pr.PID, pr.Host, pr.Version, ms(now),
		presenceVersionsJSON(p.Versions), pr.Config, configAt(pr), p.Workers); err != nil {
		return fmt.Errorf("record pool: %w", err)
	}
	return nil
}

func configAt(pr store.Process) int64 {
	if pr.Config == "" || pr.ConfigAt.IsZero() {
		return 0
	}
	return ms(pr.ConfigAt)
}

// livePoolsSQL reads what the live pools take; livePoolsOldSQL on a read-only
// file without job versions.
const (
	livePoolsSQL    = `SELECT types, versions FROM pools WHERE seen_at >= ?`
	livePoolsOldSQL = `SELECT types, '{}' FROM pools WHERE seen_at >= ?`
)

// waitingSQL counts, by type and version, the ready jobs no live pool takes
// (?2 and ?3, as in claimableJobs), through the claim index: the type index
// would walk every job. Unhandled runs it only when a job may wait.
const waitingSQL = `SELECT type, version, count(*), min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1
	AND NOT (version = 1 AND type IN (SELECT value FROM json_each(?2))
		OR version <> 1 AND (type, version) IN (SELECT value->>0, value->>1 FROM json_each(?3)))
GROUP BY type, version ORDER BY type, version`

// waitingOldSQL is waitingSQL on a file without job versions.
const waitingOldSQL = `SELECT type, 1, count(*), min(run_at) FROM jobs INDEXED BY jobs_ready
WHERE state = 'pending' AND run_at <= ?1 AND type NOT IN (SELECT value FROM json_each(?2))
GROUP BY type ORDER BY type`

// unhandledSQL finds from the job counts the pending types no live pool
// handles: usually none.
const unhandledSQL = `SELECT count(*) FROM job_counts_now
WHERE state = 'pending' AND n > 0
	AND type NOT IN (SELECT value FROM json_each(?1))`

// unhandledUnmarkedSQL is unhandledSQL on a read-only file without the count
// mark.
const unhandledUnmarkedSQL = `SELECT count(*) FROM job_counts
WHERE state = 'pending' AND n > 0
	AND type NOT IN (SELECT value FROM json_each(?1))`

// versionedSQL tells, from their partial index, whether a pending job of
// another version exists.
const versionedSQL = `SELECT EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_versioned WHERE state = 'pending' AND version <> 1)`

// Unhandled implements store.JobViews.Unhandled; a read-only file older than
// the pools table knows none.
func (s *Store) Unhandled(ctx context.Context) (store.Unhandled, error) {
	if s.schema.noPools {
		return store.Unhandled{}, nil
	}
	return store.FindUnhandled(ctx, unhandledReads{s}, s.clock.Now())
}

type unhandledReads struct{ s *Store }

func (u unhandledReads) LivePools(ctx context.Context, since time.Time) ([]store.PoolTypes, error) {
	q := livePoolsSQL
	if u.s.schema.noVersions {
		q = livePoolsOldSQL
	}
	return store.Collect(store.Read(reader(u).Query(ctx, q, since)), func(r store.Row) (store.PoolTypes, error) {
		var p store.PoolTypes
		var types, versions string
		if err := r.Scan(&types, &versions); err != nil {
			return p, err
		}
		if err := json.Unmarshal([]byte(types), &p.Types); err != nil {
			return p, fmt.Errorf("pool types: %w", err)
		}
		if err := json.Unmarshal([]byte(versions), &p.Versions); err != nil {
			return p, fmt.Errorf("pool versions: %w", err)
		}
		return p, nil
	})
}

// MayWait reads the job counts and, when every pending type is handled, the
// index of pending jobs of other versions.
func (u unhandledReads) MayWait(ctx context.Context, handled []string) (bool, error) {
	sc := u.s.schema
	if sc.counts == countsNone {
		return true, nil
	}
	var unhandled, versioned int
	q := [...]string{countsTable: unhandledUnmarkedSQL, countsMarked: unhandledSQL}[sc.counts]
	if err := reader(u).QueryRow(ctx, q, u.s.types.json(handled)).Scan(&unhandled); err != nil {
		return false, err
	}
	if unhandled == 0 && !sc.noVersions {
		if err := reader(u).QueryRow(ctx, versionedSQL).Scan(&versioned); err != nil {
			return false, err
		}
	}
	return unhandled > 0 || versioned > 0, nil
}

func (u unhandledReads) Waiting(ctx context.Context, now time.Time, handled []string, all store.Versions) store.Reading {
	if u.s.schema.noVersions {
		return store.Read(reader(u).Query(ctx, waitingOldSQL, now, u.s.types.json(handled)))
	}
	plain, pairs := all.Split(handled)
	return store.Read(reader(u).Query(ctx, waitingSQL, now, u.s.types.json(plain), pairsJSON(pairs)))
}

// presenceVersionsJSON returns a pool's versions as a JSON object.
func presenceVersionsJSON(vs store.Versions) string {
	if len(vs) == 0 {
		return "{}"
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// typesCache keeps the JSON arrays of the type lists a busy pool passes,
// unchanged, many times a second: comparing costs less than encoding.
type typesCache struct {
	mu   sync.Mutex
	last [2]typesJSON // the two lists last asked for; next is replaced first
	next int
}

type typesJSON struct {
	types []string
	json  string
}

func (c *typesCache) json(types []string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.last {
		if e.json != "" && slices.Equal(e.types, types) {
			return e.json
		}
	}
	j := jsonText(types)
	c.last[c.next] = typesJSON{types: slices.Clone(types), json: j}
	c.next = 1 - c.next
	return j
}
