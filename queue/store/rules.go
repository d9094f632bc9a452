package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The rules below are the same on every engine: an engine applies them to
// its arguments before it writes anything.

// ErrPausedMoved is ErrCursorMoved for a schedule paused or resumed since
// its cursor was read.
var ErrPausedMoved = fmt.Errorf("schedule paused or resumed since its cursor was read: %w", ErrCursorMoved)

// PrepareJobs validates jobs and fills their defaults: a fresh key
// (RandomKey), the payload {}, DefaultMaxAttempts, and now as run_at.
func PrepareJobs(jobs []NewJob, now time.Time) ([]NewJob, error) {
	out := make([]NewJob, len(jobs))
	for i, j := range jobs {
		if j.Type == "" {
			return nil, fmt.Errorf("enqueue job %d: empty type", i)
		}
		if j.Key == "" {
			j.Key = RandomKey(now)
		}
		if len(j.Payload) == 0 {
			j.Payload = json.RawMessage("{}")
		} else if !json.Valid(j.Payload) {
			return nil, fmt.Errorf("enqueue job %q: payload is not valid JSON", j.Key)
		}
		if j.MaxAttempts <= 0 {
			j.MaxAttempts = DefaultMaxAttempts
		}
		if j.RunAt.IsZero() {
			j.RunAt = now
		}
		if j.SkipIfActive && j.Schedule == "" {
			return nil, fmt.Errorf("enqueue job %q: SkipIfActive needs a schedule", j.Key)
		}
		out[i] = j
	}
	return out, nil
}

// RandomKey returns the key of a job enqueued without one: "job|", then
// the enqueue time in nanoseconds and 64 random bits in hex (32 digits).
// Keys made in time order land at the end of the key index, so a batch of
// new jobs writes one or two of its pages instead of one per job. Nothing
// else makes a key of that form, so an engine need not remember a purged
// job's generated key as used: it cannot be enqueued again.
func RandomKey(now time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now.UnixNano()))
	rand.Read(b[8:])
	return "job|" + hex.EncodeToString(b[:])
}

// CheckAdvance reports an Advance that no stored cursor could accept.
func CheckAdvance(a Advance) error {
	if a.Schedule == "" {
		return errors.New("advance: empty schedule")
	}
	if a.Resume && !a.Paused {
		return fmt.Errorf("advance %s: resume of a schedule read running", a.Schedule)
	}
	if a.To.Before(a.From) {
		return fmt.Errorf("advance %s: cursor cannot move back from %s to %s", a.Schedule, a.From.UTC().Format(time.RFC3339), a.To.UTC().Format(time.RFC3339))
	}
	return nil
}
