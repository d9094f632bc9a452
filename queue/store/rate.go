package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// RateLimit bounds how often jobs of one type start, across every pool on
// the database: one start per Every on average, and at most Burst at once
// after a quiet spell. With Burst 1 the starts are at least Every apart, so
// that "10 per minute" (Every 6s) never starts more than 10 in any minute.
//
// Each limit is a bucket of the rate_limits table, one per type, or per
// type and key when Key is set, holding one instant: the bucket's
// theoretical arrival time (TAT) of the generic cell rate algorithm. A
// start at now is allowed when TAT − (Burst−1)×Every ≤ now, and moves TAT
// to max(TAT, now) + Every. A bucket whose TAT is past is full (Burst
// starts allowed), the same as no row at all, so rows with a past TAT are
// deleted by the purge.
type RateLimit struct {
	Every time.Duration // at least 1ns
	Burst int           // at least 1
	// Key, when set, gives each job's bucket from its id and payload: a
	// limit per key (a customer, an account). A claim calls it inside its
	// transaction, for each of the up to RateWindow ready jobs it reads, so
	// it must be quick; it must be safe for concurrent use. An error means
	// that the job has no bucket: the claim takes it, within its room,
	// without spending a start of any bucket, for the pool to fail it
	// without running it.
	Key func(id int64, payload json.RawMessage) (string, error)
}

// tolerance is how far ahead of now a bucket's TAT may be for a start to
// be allowed: the room for Burst−1 starts beyond the one.
func (l RateLimit) tolerance() time.Duration { return time.Duration(max(l.Burst, 1)-1) * l.Every }

// NextStart is when a bucket at tat allows its next start.
func (l RateLimit) NextStart(tat time.Time) time.Time { return tat.Add(-l.tolerance()) }

// take spends one start of a bucket at tat at now: ok reports that it was
// allowed, and next is the bucket's TAT after it.
func (l RateLimit) take(tat, now time.Time) (next time.Time, ok bool) {
	if l.NextStart(tat).After(now) {
		return tat, false
	}
	if tat.Before(now) {
		tat = now
	}
	return tat.Add(l.Every), true
}

// PauseTAT is the TAT that stops a bucket's starts until until: the limit
// of a type or key pauses when the remote side asks to slow down
// (a RetryAfter). The first start after it is alone, then one per Every.
func (l RateLimit) PauseTAT(until time.Time) time.Time { return until.Add(l.tolerance()) }

// RatedClaim is a type with a rate limit in a Claim: at most Room of its
// ready jobs are claimed, in claim order, each only if its bucket allows.
type RatedClaim struct {
	Type  string
	Limit RateLimit
	// Versions are the payload versions of Type the pool runs (nil: [1]):
	// jobs of others are passed over, and spend no start.
	Versions []int
	// Room is how many of its jobs may start now: the pool's free workers
	// (a rate-limited job is never claimed ahead of a worker, so that it
	// starts when it is counted) and its concurrency limit's room.
	Room int
}

// AcceptedVersions are the versions of r.Type the claim takes.
func (r RatedClaim) AcceptedVersions() []int {
	if r.Versions == nil {
		return []int{1}
	}
	return r.Versions
}

// Window is how many ready jobs of r.Type a claim of room of them reads:
// without a key one bucket decides, so the next room jobs and one more, to
// tell whether the bucket held one back; with a key, RateWindow.
func (r RatedClaim) Window(room int) int {
	if r.Limit.Key != nil {
		return RateWindow
	}
	return room + 1
}

// ClaimRated claims the types of rated in turn with claim, each within its
// Room and within n jobs in all counting jobs, those claimed before it. It
// returns jobs with the new ones, in claim order, and the earliest wait
// that claim reported (zero: none). Rate-limited types come last in a
// claim and are never prefetched, so that giving back prefetched jobs
// (PrefetchCut) never gives back a job whose start a bucket counted.
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

// RateWindow is how many ready jobs of a type with a keyed limit a claim
// reads to find those whose keys' buckets allow a start: jobs of a key
// behind RateWindow ready jobs of keys at their limit wait until those
// move.
const RateWindow = 1000

// RateCandidate is a ready job of a rated type, in claim order, with its
// bucket's key, or NoKey when the limit's Key failed for it.
type RateCandidate struct {
	ID    int64
	Key   string
	NoKey bool
}

// Candidate is the job id, of payload, as a candidate of r's claim: its
// key read from the payload when the limit is per key.
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
// reads, in the order a claim locks them.
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

// TakeRated picks, among cands in claim order, the jobs whose buckets
// allow a start at now, and those without a bucket (NoKey), at most room
// of them. tats holds the buckets' TATs by key (a missing key is a full
// bucket); it is updated in place for the buckets that gave starts, which
// changed lists. wait is the earliest next start of a bucket that held a
// candidate back, zero when none did.
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
