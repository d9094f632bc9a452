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

// Trip is one write transaction of a pool: results, reclaim, heartbeat,
// presence and claim, in that order (see store.PoolTx).
func (s *Store) CommitPoolTx(ctx context.Context, t store.PoolTx) (store.PoolTxResult, error) {
	var res store.PoolTxResult
	var cr *claimRequest
	if t.Claim != nil {
		c := t.Claim
		plain, pairs := c.Versions.Split(c.Types)
		cr = &claimRequest{owner: t.Owner, lease: c.Lease, n: c.N, types: s.types.json(plain), pairs: pairsJSON(pairs),
			limited: c.Limited, versions: c.Versions, prefetch: c.Prefetch, stopBeforeLast: c.StopBeforeLast, rated: c.Rated}
	}
	var presence, versions string
	if t.Presence != nil {
		presence = s.types.json(t.Presence.Types)
		versions = presenceVersionsJSON(t.Presence.Versions)
	}
	err := s.inTx(ctx, false, func(tx txn) error {
		var err error
		if res.Fenced, err = finish(ctx, tx, t.Owner, t.Results); err != nil {
			return err
		}
		if t.Reclaim {
			if res.Reclaimed, err = s.reclaim(ctx, tx, t.Now); err != nil {
				return err
			}
		}
		if !t.Heartbeat.IsZero() {
			if _, err := heartbeat(ctx, tx, t.Owner, t.Heartbeat); err != nil {
				return err
			}
		}
		if p := t.Presence; p != nil {
			if err := present(ctx, tx, t.Owner, p.Process, presence, versions, t.Now, p.First); err != nil {
				return err
			}
		}
		if cr != nil {
			if res.Claimed, res.GaveBack, res.RateWait, err = claim(ctx, tx, t.Now, *cr); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.PoolTxResult{}, err
	}
	return res, nil
}

// NextWake returns when the next pending job of one of types, of a version
// versions accepts, becomes ready and when the earliest lease held by an
// owner other than owner expires (zero when none), as reclaim judges it (see
// store.Leases). It reads, without the write lock.
func (s *Store) NextWake(ctx context.Context, owner string, types []string, versions store.Versions) (ready, lease time.Time, err error) {
	held, err := s.leases.Margin(s.clock.Now(), func() (time.Time, error) {
		st, err := s.readStmt(ctx, latestLeaseSQL)
		if err != nil {
			return time.Time{}, err
		}
		return latestLease(st.QueryRowContext(ctx))
	})
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next wake: %w", err)
	}
	plain, pairs := versions.Split(types)
	ready, lease, err = s.nextWake(ctx, owner, s.types.json(plain), pairsJSON(pairs))
	if !lease.IsZero() {
		lease = lease.Add(held) // when reclaim takes it (see store.Leases)
	}
	return ready, lease, err
}

// Absent deletes owner's pool row: the pool stopped claiming.
func (s *Store) Leave(ctx context.Context, owner string) error {
	return s.inTx(ctx, false, func(tx txn) error {
		_, err := tx.exec(ctx, absentSQL, owner)
		return err
	})
}

// typesCache keeps the JSON arrays of the type lists a pool passes at every
// trip and wake (its handled types, and those without a concurrency limit),
// for throughput: the statements take the list as one JSON argument, read
// by json_each, and a busy pool asks many times a second with lists that
// change only when it registers a handler. Comparing a list with a cached
// one costs less than encoding it.
type typesCache struct {
	mu   sync.Mutex
	last [2]typesJSON // the two lists last asked for; next is replaced first
	next int
}

type typesJSON struct {
	types []string
	json  string
}

// json returns types as a JSON array ("[]" for none).
func (c *typesCache) json(types []string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.last {
		if e.json != "" && slices.Equal(e.types, types) {
			return e.json
		}
	}
	b, err := json.Marshal(types)
	if err != nil || types == nil {
		b = []byte("[]")
	}
	c.last[c.next] = typesJSON{types: slices.Clone(types), json: string(b)}
	c.next = 1 - c.next
	return string(b)
}
