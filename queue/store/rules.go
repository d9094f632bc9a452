package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// The rules below are the same on every engine: an engine applies them to
// its arguments before it writes anything.

// ErrPausedMoved is ErrCursorMoved for a schedule paused or resumed since
// its cursor was read.
var ErrPausedMoved = fmt.Errorf("schedule paused or resumed since its cursor was read: %w", ErrCursorMoved)

// PrepareJobs validates jobs (their payloads with CheckPayload) and fills
// their defaults: a fresh key (RandomKey), the payload {},
// DefaultMaxAttempts, and now as run_at.
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
		} else if err := CheckPayload(j.Payload); err != nil {
			return nil, fmt.Errorf("enqueue job %q: %w", j.Key, err)
		}
		if j.MaxAttempts <= 0 {
			j.MaxAttempts = DefaultMaxAttempts
		}
		if j.RunAt.IsZero() {
			j.RunAt = now
		}
		switch {
		case j.Version == 0:
			j.Version = 1
		case j.Version < 0:
			return nil, fmt.Errorf("enqueue job %q: version %d is not at least 1", j.Key, j.Version)
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

// AdvanceBatchRows bounds the rows (jobs, skips and the cursor) of the
// Advances that one AdvanceBatch transaction commits, so that a tick of
// many schedules does not hold the writer from the pools for long. An
// Advance larger than that on its own gets a transaction of its own; an
// Advance is never split.
const AdvanceBatchRows = 5000

// CommitAdvances commits the prepared Advances advs[i], for i in idx, in
// one transaction, and on commit sets their results in res.
type CommitAdvances func(advs []Advance, idx []int, res []AdvanceResult) error

// BatchAdvances is AdvanceBatch's rules, the same on every engine: it
// refuses a schedule named twice, checks each Advance and fills its jobs'
// defaults at now (an invalid one gets its own Err and is left out), and
// hands the others to commit in the order of their schedules' names (see
// byScheduleName), in groups of up to AdvanceBatchRows rows. Once a group
// fails, it and the groups after it get that error.
func BatchAdvances(advs []Advance, now time.Time, commit CommitAdvances) ([]AdvanceResult, error) {
	seen := make(map[string]bool, len(advs))
	for _, a := range advs {
		if seen[a.Schedule] {
			return nil, fmt.Errorf("advance batch: schedule %q twice", a.Schedule)
		}
		seen[a.Schedule] = true
	}
	res := make([]AdvanceResult, len(advs))
	prepared := make([]Advance, len(advs))
	var chunk []int // indexes into advs of the next transaction
	rows := 0
	var failed error
	flush := func() {
		if len(chunk) == 0 {
			return
		}
		if failed == nil {
			failed = commit(prepared, chunk, res)
		}
		if failed != nil {
			for _, i := range chunk {
				res[i] = AdvanceResult{Err: fmt.Errorf("advance %s: %w", advs[i].Schedule, failed)}
			}
		}
		chunk, rows = chunk[:0], 0
	}
	for _, i := range byScheduleName(advs) {
		a := advs[i]
		if err := CheckAdvance(a); err != nil {
			res[i].Err = err
			continue
		}
		jobs, err := PrepareJobs(a.Jobs, now)
		if err != nil {
			res[i].Err = fmt.Errorf("advance %s: %w", a.Schedule, err)
			continue
		}
		a.Jobs = jobs
		prepared[i] = a
		n := 1 + len(a.Jobs) + len(a.Skips)
		if rows > 0 && rows+n > AdvanceBatchRows {
			flush()
		}
		chunk = append(chunk, i)
		rows += n
	}
	flush()
	return res, nil
}

// byScheduleName returns the indexes of advs in the order of their
// schedules' names.
//
// The order is for speed. The indexes that a tick writes into at one place
// per schedule (the jobs' keys, which begin with the schedule's name, and
// the indexes on (schedule, ...)) are in this order, so a transaction of
// Advances sorted by name writes one run of neighbouring pages of each,
// and the next transaction the run after it; in the order of a file, every
// transaction would dirty pages all over each index, and commit them all.
func byScheduleName(advs []Advance) []int {
	order := make([]int, len(advs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(advs[a].Schedule, advs[b].Schedule) })
	return order
}

// SortClaimOrder puts claimed jobs in claim order: priority descending,
// then run_at, then id. A claim's RETURNING yields rows in no promised
// order; a pool starts them in this one.
func SortClaimOrder(jobs []*Job) {
	sort.SliceStable(jobs, func(a, b int) bool {
		if jobs[a].Priority != jobs[b].Priority {
			return jobs[a].Priority > jobs[b].Priority
		}
		if !jobs[a].RunAt.Equal(jobs[b].RunAt) {
			return jobs[a].RunAt.Before(jobs[b].RunAt)
		}
		return jobs[a].ID < jobs[b].ID
	})
}

// PrefetchCut returns how many of jobs, claimed in claim order for a
// Claim of n jobs of which prefetch ahead of a free worker, the claim
// keeps; the rest go back. A crash spends the attempt of every claimed
// job, started or not (the lease cannot tell), so a job on its last
// attempt is not prefetched: past the n-prefetch jobs for free workers,
// the claim keeps the jobs before the first such job. It returns
// len(jobs) when nothing goes back.
func PrefetchCut(jobs []*Job, n, prefetch int) int {
	keep := max(n-prefetch, 0)
	if prefetch <= 0 || len(jobs) <= keep {
		return len(jobs)
	}
	if cut := slices.IndexFunc(jobs[keep:], (*Job).LastAttempt); cut >= 0 {
		return keep + cut
	}
	return len(jobs)
}

// CheckLimit checks the limit of an operator's read of up to limit rows
// (ListSkips, Alarms): 1 to MaxList. what names the read in the error.
func CheckLimit(what string, limit int) error {
	if limit < 1 || limit > MaxList {
		return fmt.Errorf("%s: limit %d: want 1 to %d", what, limit, MaxList)
	}
	return nil
}

// Bounds of a job's payload, the same at every enqueue: a payload is shown
// in listings and JSON output, decoded by task templates and merged into
// notifications, so one stored row must not be too large or too deep for
// any of them.
const (
	// MaxPayloadSize bounds a payload, in bytes.
	MaxPayloadSize = 1 << 20
	// MaxPayloadDepth bounds the nesting of a payload's objects and
	// arrays: {"a": [1]} is two levels.
	MaxPayloadDepth = 32
)

var (
	// ErrPayloadTooLarge is wrapped by the error of a payload over
	// MaxPayloadSize.
	ErrPayloadTooLarge = errors.New("payload too large")
	// ErrPayloadTooDeep is wrapped by the error of a payload nested deeper
	// than MaxPayloadDepth.
	ErrPayloadTooDeep = errors.New("payload nested too deep")
	// ErrPayloadNotJSON is wrapped by the error of a payload that is not
	// JSON.
	ErrPayloadNotJSON = errors.New("payload is not valid JSON")
)

// CheckPayload reports a payload that is over MaxPayloadSize, nested deeper
// than MaxPayloadDepth, or not JSON.
func CheckPayload(p []byte) error {
	if len(p) > MaxPayloadSize {
		return fmt.Errorf("%w: %d bytes, more than %d (1 MiB)", ErrPayloadTooLarge, len(p), MaxPayloadSize)
	}
	if d := PayloadDepth(p); d > MaxPayloadDepth {
		return fmt.Errorf("%w: more than %d levels of objects and arrays", ErrPayloadTooDeep, MaxPayloadDepth)
	}
	if !json.Valid(p) {
		return ErrPayloadNotJSON
	}
	return nil
}

// PayloadDepth returns the deepest nesting of objects and arrays in p, a
// JSON text, skipping strings; it does not validate p.
func PayloadDepth(p []byte) int {
	depth, deepest := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '"':
			for i++; i < len(p) && p[i] != '"'; i++ {
				if p[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest
}
