package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Claimer is a claim's statements in an engine's write transaction; the flow
// (ClaimJobs) is the same on every engine.
type Claimer interface {
	// ClaimReady claims and counts up to n ready jobs of types and versions,
	// in claim order.
	ClaimReady(ctx context.Context, types []string, versions Versions, n int) ([]*Job, error)
	// LastAttempts reads whether each of the next n jobs ClaimReady would
	// take is on its last attempt.
	LastAttempts(ctx context.Context, types []string, versions Versions, n int) ([]bool, error)
	// Unclaim gives back and counts claimed jobs as they were.
	Unclaim(ctx context.Context, jobs []*Job) error
	RateClaimer
}

// RateClaimer is a rate-limited type's claim statements (see ClaimRatedType).
type RateClaimer interface {
	// RateCandidates reads id and payload of r's next window ready jobs.
	RateCandidates(ctx context.Context, r RatedClaim, window int) Reading
	// RateBuckets reads key and TAT of typ's buckets of keys (sorted), locked
	// where other writers could read them.
	RateBuckets(ctx context.Context, typ string, keys []string) Reading
	// ClaimIDs claims and counts the pending jobs of ids.
	ClaimIDs(ctx context.Context, ids []int64) ([]*Job, error)
	// WriteBuckets sets typ's buckets' TATs to tats.
	WriteBuckets(ctx context.Context, typ string, keys []string, tats map[string]time.Time) error
}

// ClaimJobs takes what c asks, in this order: unlimited types (with
// StopBeforeLast, stopping before a last attempt past the workers' share);
// each concurrency-limited type by name, within its room; giving back
// prefetched jobs from a last attempt on (gaveBack); rate-limited types
// within their buckets. rateWait is when a held-back job may start, or zero.
func ClaimJobs(ctx context.Context, tx Claimer, c *Claim, now time.Time) (jobs []*Job, gaveBack bool, rateWait time.Time, err error) {
	if c.N <= 0 {
		return nil, false, time.Time{}, nil
	}
	n := c.N
	if len(c.Types) == 0 {
		n = 0
	}
	if n > 0 && c.StopBeforeLast && c.Prefetch > 0 {
		last, err := tx.LastAttempts(ctx, c.Types, c.Versions, c.N)
		if err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim: %w", err)
		}
		n = stopBeforeLast(last, c.N, max(c.N-c.Prefetch, 0))
	}
	if n > 0 {
		if jobs, err = tx.ClaimReady(ctx, c.Types, c.Versions, n); err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim: %w", err)
		}
	}
	limited := make([]string, 0, len(c.Limited))
	for t := range c.Limited {
		limited = append(limited, t)
	}
	sort.Strings(limited)
	for _, t := range limited {
		room := min(c.Limited[t], c.N-len(jobs))
		if room <= 0 {
			continue
		}
		js, err := tx.ClaimReady(ctx, []string{t}, c.Versions, room)
		if err != nil {
			return nil, false, time.Time{}, fmt.Errorf("claim %s: %w", t, err)
		}
		jobs = append(jobs, js...)
	}
	if jobs, gaveBack, err = KeepClaimed(ctx, tx, jobs, c.N, c.Prefetch); err != nil {
		return nil, false, time.Time{}, err
	}
	jobs, rateWait, err = ClaimRated(jobs, c.Rated, c.N, func(r RatedClaim, room int) ([]*Job, time.Time, error) {
		return ClaimRatedType(ctx, tx, r, room, now)
	})
	if err != nil {
		return nil, false, time.Time{}, err
	}
	return jobs, gaveBack, rateWait, nil
}

// stopBeforeLast returns how many of n jobs to take so that none past the
// first keep is on its last attempt, nor after one that is.
func stopBeforeLast(last []bool, n, keep int) int {
	for i, l := range last {
		if l && i >= keep {
			return i
		}
	}
	return n
}

// KeepClaimed sorts a claim's jobs and gives back the prefetched ones from a
// last attempt on (see PrefetchCut), reporting gaveBack.
func KeepClaimed(ctx context.Context, tx Claimer, jobs []*Job, n, prefetch int) (kept []*Job, gaveBack bool, err error) {
	SortClaimOrder(jobs)
	cut := PrefetchCut(jobs, n, prefetch)
	if cut == len(jobs) {
		return jobs, false, nil
	}
	if err := tx.Unclaim(ctx, jobs[cut:]); err != nil {
		return nil, false, fmt.Errorf("give back prefetched jobs: %w", err)
	}
	return jobs[:cut], true, nil
}

// ClaimRatedType claims up to room ready jobs of a rate-limited type that
// their buckets allow at now, and moves those buckets. wait is the earliest
// next start of a bucket that held one back, or zero.
func ClaimRatedType(ctx context.Context, tx RateClaimer, r RatedClaim, room int, now time.Time) (jobs []*Job, wait time.Time, err error) {
	cands, err := Collect(tx.RateCandidates(ctx, r, r.Window(room)), func(row Row) (RateCandidate, error) {
		var id int64
		var payload string
		err := row.Scan(&id, &payload)
		return r.Candidate(id, payload), err
	})
	if err != nil || len(cands) == 0 {
		return nil, time.Time{}, err
	}
	tats := map[string]time.Time{}
	err = tx.RateBuckets(ctx, r.Type, RateKeys(cands)).Each(func(row Row) (bool, error) {
		var k string
		var tat Time
		err := row.Scan(&k, &tat)
		tats[k] = tat.Time
		return true, err
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	picked, changed, wait := TakeRated(r.Limit, now, cands, tats, room)
	if len(picked) == 0 {
		return nil, wait, nil
	}
	if jobs, err = tx.ClaimIDs(ctx, picked); err != nil {
		return nil, time.Time{}, err
	}
	if err := tx.WriteBuckets(ctx, r.Type, changed, tats); err != nil {
		return nil, time.Time{}, fmt.Errorf("rate limit of %s: %w", r.Type, err)
	}
	return jobs, wait, nil
}
