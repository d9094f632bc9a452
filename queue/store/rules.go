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

// The rules below are the same on every engine, applied before it writes.

// ErrPausedMoved is ErrCursorMoved for a schedule paused or resumed since
// its cursor was read.
var ErrPausedMoved = fmt.Errorf("schedule paused or resumed since its cursor was read: %w", ErrCursorMoved)

// PrepareJobs validates jobs (payloads with CheckPayload) and fills their
// defaults: a RandomKey, the payload {}, DefaultMaxAttempts, run_at now.
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

// RandomKey returns a job's key when enqueued without one: "job|", the time
// in nanoseconds and 64 random bits, in hex. Keys in time order land at the
// end of the key index, so a batch writes one or two of its pages. No other
// key has this form, so a purged job's need not be kept used.
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

// AdvanceBatchRows bounds the rows (jobs, skips, cursor) of one AdvanceBatch
// transaction, so a tick of many schedules does not hold the writer long. An
// Advance is never split.
const AdvanceBatchRows = 5000

// CommitAdvances commits the prepared advs[i], i in idx, in one transaction
// and sets their results in res.
type CommitAdvances func(advs []Advance, idx []int, res []AdvanceResult) error

// BatchAdvances is AdvanceBatch's rules: it refuses a schedule named twice,
// checks each Advance and fills its jobs' defaults (an invalid one gets its
// own Err), and hands the rest to commit by schedule name in groups of up to
// AdvanceBatchRows rows. Once a group fails, it and the later groups get that
// error.
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

// byScheduleName returns advs' indexes by schedule name, for speed: a tick's
// index writes (keys begin with the schedule's name, indexes on schedule)
// then fall in one run of neighbouring pages per transaction, not all over
// each index.
func byScheduleName(advs []Advance) []int {
	order := make([]int, len(advs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(advs[a].Schedule, advs[b].Schedule) })
	return order
}

// SortClaimOrder puts claimed jobs in claim order (priority descending,
// run_at, id), which a RETURNING does not promise.
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

// PrefetchCut returns how many of a claim's jobs, in claim order, to keep
// when prefetch of n are ahead of a free worker (len(jobs): all). A crash
// spends every claimed job's attempt, started or not, so past the first
// n-prefetch it keeps those before the first on its last attempt.
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

// CheckLimit checks an operator's read limit: 1 to MaxList. what names the
// read in the error.
func CheckLimit(what string, limit int) error {
	if limit < 1 || limit > MaxList {
		return fmt.Errorf("%s: limit %d: want 1 to %d", what, limit, MaxList)
	}
	return nil
}

// Bounds of a payload: it is listed, shown as JSON, decoded by templates and
// merged into notifications, so it must not be too large or deep.
const (
	MaxPayloadSize  = 1 << 20 // bytes
	MaxPayloadDepth = 32      // nesting of objects and arrays: {"a": [1]} is two
)

// The errors CheckPayload reports, the first two wrapped.
var (
	ErrPayloadTooLarge = errors.New("payload too large")       // over MaxPayloadSize
	ErrPayloadTooDeep  = errors.New("payload nested too deep") // over MaxPayloadDepth
	ErrPayloadNotJSON  = errors.New("payload is not valid JSON")
)

// CheckPayload reports a payload over MaxPayloadSize, deeper than
// MaxPayloadDepth, or not JSON.
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

// PayloadDepth returns the deepest nesting of objects and arrays in JSON text
// p, skipping strings, without validating p.
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
