package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// UnhandledReads are the reads of FindUnhandled, in an engine's dialect.
type UnhandledReads interface {
	// LivePools reads the types and versions of pools seen since since.
	LivePools(ctx context.Context, since time.Time) ([]PoolTypes, error)
	// MayWait tells cheaply whether a ready job may wait for a handler while
	// the running pools take only version 1; yes if it cannot tell.
	MayWait(ctx context.Context, handled []string) (bool, error)
	// Waiting counts, by type and version, jobs ready at now that no running
	// pool takes (Versions.Split of all over handled): type, version, count,
	// oldest run_at.
	Waiting(ctx context.Context, now time.Time, handled []string, all Versions) Reading
}

// FindUnhandled reports, from r's reads at now, which ready jobs wait for a
// handler. Usually none do, and it reads no job.
func FindUnhandled(ctx context.Context, r UnhandledReads, now time.Time) (Unhandled, error) {
	h := Unhandled{Known: true}
	pools, err := r.LivePools(ctx, now.Add(-AliveWithin))
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	h.Pools = len(pools)
	accepted := Accepted(pools)
	handled := make([]string, 0, len(accepted))
	all := Versions{} // what the pools take, as if one pool took it all
	for t, vs := range accepted {
		handled = append(handled, t)
		if len(vs) != 1 || vs[0] != 1 {
			all[t] = vs
		}
	}
	sort.Strings(handled)
	if len(all) == 0 {
		may, err := r.MayWait(ctx, handled)
		if err != nil || !may {
			return h, wrapErr("handlers", err)
		}
	}
	byVersion, err := Collect(r.Waiting(ctx, now, handled, all), func(row Row) (Waiting, error) {
		var w Waiting
		var oldest Time
		err := row.Scan(&w.Type, &w.Version, &w.Ready, &oldest)
		w.Oldest = now.Sub(oldest.Time)
		return w, err
	})
	if err != nil {
		return h, fmt.Errorf("handlers: %w", err)
	}
	h.Waiting = MergeWaiting(byVersion, accepted)
	return h, nil
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
