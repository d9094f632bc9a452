package store

import "time"

// WatchConfig tunes PoolProtocol.Watch.
type WatchConfig struct {
	Poll   time.Duration // the period of the look when changes cannot be told
	Safety time.Duration // the period of the look under the notices
}

// PoolTx is one transaction of a pool's loop, in this order: record
// Results (fenced), reclaim expired leases when Reclaim, extend the leases
// of the owner's running jobs to Heartbeat when it is not zero, write the
// pool's row when Presence is not nil, and claim when Claim is not nil.
// All of it commits, or none.
type PoolTx struct {
	Owner     string
	Now       time.Time
	Results   []Result
	Reclaim   bool
	Heartbeat time.Time
	Presence  *Presence
	Claim     *Claim
}

// PoolTxResult is what a PoolTx did.
type PoolTxResult struct {
	// Fenced tells, for each of PoolTx.Results, whether its fence held: the
	// job was still running under that owner and attempt. A result whose
	// fence failed changed nothing but was recorded as a stale attempt.
	Fenced    []bool
	Reclaimed []Reclaimed
	// Claimed are the jobs claimed, in claim order (priority descending,
	// then run_at, then id), now running under the owner with a lease to
	// Now + Claim.Lease.
	Claimed []*Job
	// GaveBack reports that the claim gave back prefetched jobs from one on
	// its last attempt on (see Claim.Prefetch).
	GaveBack bool
	// RateWait is when a ready job that a rate limit held back may start:
	// the earliest next start of the buckets that held one back (see
	// Claim.Rated). Zero when none was held back.
	RateWait time.Time
}

// Result is the end of one attempt, to be recorded by a PoolTx. The outcome
// statements are fenced on (id, owner, attempt, running): a worker whose
// lease was reclaimed, and maybe claimed again elsewhere, changes nothing.
type Result struct {
	Job      *Job    // as claimed: ID, Owner and Attempt are the fence
	Worker   string  // the worker that ran it, recorded with the attempt
	Outcome  Outcome // done, retry, dead, released or cancelled
	Error    string  // capped at MaxOutput bytes by the store
	Output   string
	RetryAt  time.Time // for retry: when to run again
	Started  time.Time
	Finished time.Time
	// TimedOut reports that the type's timeout ended the attempt. Engines
	// do not store it: it is for the pool's observers.
	TimedOut bool
}

// Presence is a pool's row in the pools table.
type Presence struct {
	Types []string // the types it has handlers for
	// Versions are the payload versions it runs of Types (see Versions).
	Versions Versions
	Process  Process
	// First is set on the pool's first write: it also deletes the rows of
	// pools gone for PresenceKept.
	First bool
}

// Claim asks for up to N ready jobs (run_at ≤ PoolTx.Now, pending) of Types,
// plus up to Limited[t] of each limited type t, N overall, of the versions
// Versions accepts. Jobs of other types or versions are passed over and
// stay pending, their attempts unspent.
type Claim struct {
	Lease    time.Duration
	N        int
	Types    []string
	Limited  map[string]int
	Versions Versions
	// Prefetch is how many of the N are claimed ahead of a free worker.
	// A crash spends the attempt of every claimed job, started or not, so
	// past the first N − Prefetch jobs the claim keeps only the jobs before
	// the first one on its last attempt and gives the rest back
	// (PoolTxResult.GaveBack).
	Prefetch int
	// StopBeforeLast makes the claim look at the ready jobs before taking
	// them, so that it stops before a job on its last attempt instead of
	// taking and giving back the jobs from it on.
	StopBeforeLast bool
	// Rated are the types with a rate limit, in no other list, claimed
	// after the others within N, each within its buckets (see RateLimit).
	Rated []RatedClaim
}

// Reclaimed is a job whose expired lease was taken back.
type Reclaimed struct {
	ID      int64
	Attempt int
	Owner   string
	Dead    bool
}

// CancelRequest is a cancel request on one attempt of a running job.
type CancelRequest struct {
	ID      int64
	Attempt int
	By      string
}

// AttemptRows returns the attempts to record of the results rs of a
// PoolTx whose fences held as ok says: a result that lost its lease as a
// stale attempt. A completion that printed nothing has none: the job's row
// records it.
func AttemptRows(rs []Result, ok []bool) []Attempt {
	var out []Attempt
	for i, r := range rs {
		outcome := r.Outcome
		if !ok[i] {
			outcome = OutcomeStale
		} else if outcome == OutcomeDone && r.Output == "" {
			continue
		}
		out = append(out, Attempt{JobID: r.Job.ID, Number: r.Job.Attempt, Worker: r.Worker, StartedAt: r.Started,
			FinishedAt: r.Finished, Outcome: outcome, Error: CapText(r.Error), Output: r.Output})
	}
	return out
}
