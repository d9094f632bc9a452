package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// RateLimit bounds how often jobs of one type start, across every pool on the
// database: one start per Every on average, at most Burst at once after a
// quiet spell; with Burst 1 starts are at least Every apart.
//
// A limit is a rate_limits row per type (or type and key) holding the
// bucket's theoretical arrival time (TAT) of the generic cell rate algorithm.
// A start at now is allowed when TAT − (Burst−1)×Every ≤ now, and moves TAT
// to max(TAT, now) + Every. A past TAT is a full bucket, like no row, so the
// purge deletes it.
type RateLimit struct {
	Every time.Duration // at least 1ns
	Burst int           // at least 1
	// Key, when set, gives each job's bucket from its id and payload (a
	// customer, an account). A claim calls it in its transaction for up to
	// RateWindow ready jobs: it must be quick and safe for concurrent use. An
	// error leaves the job bucketless: claimed without spending a start, for
	// the pool to fail it unrun.
	Key func(id int64, payload json.RawMessage) (string, error)
}

// tolerance is how far ahead of now a TAT may be for a start: room for
// Burst−1 more.
func (l RateLimit) tolerance() time.Duration { return time.Duration(max(l.Burst, 1)-1) * l.Every }

// NextStart is when a bucket at tat allows its next start.
func (l RateLimit) NextStart(tat time.Time) time.Time { return tat.Add(-l.tolerance()) }

// take spends a start of a bucket at tat at now, if allowed; next is the TAT
// after it.
func (l RateLimit) take(tat, now time.Time) (next time.Time, ok bool) {
	if l.NextStart(tat).After(now) {
		return tat, false
	}
	if tat.Before(now) {
		tat = now
	}
	return tat.Add(l.Every), true
}

// PauseTAT is the TAT that stops a bucket's starts until until, when the
// remote side asks to slow down; then one start, one per Every after.
func (l RateLimit) PauseTAT(until time.Time) time.Time { return until.Add(l.tolerance()) }

// RatedClaim is a rate-limited type in a Claim: at most Room of its ready
// jobs are claimed, in claim order, each only if its bucket allows.
type RatedClaim struct {
	Type     string
	Limit    RateLimit
	Versions []int // payload versions of Type the pool runs (nil: [1])
	// Room is how many may start now: within the pool's free workers (never
	// ahead of one, so a start is counted when it happens) and its
	// concurrency limit.
	Room int
}

// AcceptedVersions are the versions of r.Type the claim takes.
func (r RatedClaim) AcceptedVersions() []int {
	if r.Versions == nil {
		return []int{1}
	}
	return r.Versions
}

// Window is how many ready jobs a claim of room reads: room and one more to
// tell whether the one bucket held one back, or RateWindow with a key.
func (r RatedClaim) Window(room int) int {
	if r.Limit.Key != nil {
		return RateWindow
	}
	return room + 1
}

// ClaimRated claims rated's types in turn, each within its Room and n jobs in
// all, and returns jobs with the new ones in claim order, and the earliest
// wait. Rate-limited types come last and are never prefetched, so PrefetchCut
// never gives back a job whose start a bucket counted.
func ClaimRated(jobs []*Job, rated []RatedClaim, n int, claim func(r RatedClaim, room int) ([]*Job, time.Time, error)) ([]*Job, time.Time, error) {
	var wait time.Time
	before := len(jobs)
	for _, r := range rated {
		room := min(r.Room, n-len(jobs))
		if room <= 0 {
			continue
		}
		js, w, err := claim(r, room)
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("claim %s: %w", r.Type, err)
		}
		jobs = append(jobs, js...)
		if !w.IsZero() && (wait.IsZero() || w.Before(wait)) {
			wait = w
		}
	}
	if len(jobs) > before {
		SortClaimOrder(jobs)
	}
	return jobs, wait, nil
}

// RateWindow is how many ready jobs of a keyed limit a claim reads: a key
// behind RateWindow jobs of keys at their limit waits until those move.
const RateWindow = 1000

// RateCandidate is a rated type's ready job and its bucket's key, or NoKey
// when Key failed.
type RateCandidate struct {
	ID    int64
	Key   string
	NoKey bool
}

// Candidate is job id as a candidate of r's claim, keyed from payload.
func (r RatedClaim) Candidate(id int64, payload string) RateCandidate {
	c := RateCandidate{ID: id}
	if r.Limit.Key != nil {
		var err error
		c.Key, err = r.Limit.Key(id, json.RawMessage(payload))
		c.NoKey = err != nil
	}
	return c
}

// RateKeys returns the distinct keys of cands, sorted: the buckets a claim
// reads, in lock order.
func RateKeys(cands []RateCandidate) []string {
	keys := make([]string, 0, len(cands))
	for _, c := range cands {
		if !c.NoKey {
			keys = append(keys, c.Key)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// TakeRated picks up to room of cands in claim order: those whose bucket
// allows a start at now, and those without one. It updates tats (by key,
// missing: full) for the buckets that gave starts, which changed lists. wait
// is the earliest next start of a bucket that held one back, or zero.
func TakeRated(l RateLimit, now time.Time, cands []RateCandidate, tats map[string]time.Time, room int) (picked []int64, changed []string, wait time.Time) {
	seen := map[string]bool{}
	for _, c := range cands {
		if c.NoKey {
			if len(picked) < room {
				picked = append(picked, c.ID)
			}
			continue
		}
		tat, ok := l.take(tats[c.Key], now)
		if !ok {
			if w := l.NextStart(tats[c.Key]); wait.IsZero() || w.Before(wait) {
				wait = w
			}
			continue
		}
		if len(picked) >= room {
			continue // no room: a finishing job wakes the pool
		}
		tats[c.Key] = tat
		picked = append(picked, c.ID)
		if !seen[c.Key] {
			seen[c.Key] = true
			changed = append(changed, c.Key)
		}
	}
	return picked, changed, wait
}
