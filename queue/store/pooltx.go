package store

import "time"

// WatchConfig tunes PoolProtocol.Watch.
type WatchConfig struct {
	Poll   time.Duration // look period when changes cannot be told
	Safety time.Duration // look period under the notices
}

// PoolTx is one transaction of a pool's loop, all or nothing, in order:
// record Results (fenced) and delete LiveEnded; reclaim if Reclaim; extend
// the owner's leases to a non-zero Heartbeat; write the row if Presence;
// store Live; claim if Claim.
type PoolTx struct {
	Owner     string
	Now       time.Time
	Results   []Result
	Reclaim   bool
	Heartbeat time.Time
	Presence  *Presence
	Claim     *Claim
	// Live are running attempts' output tails to store in one statement,
	// each replacing its job's, fenced on (id, Owner, attempt, running): an
	// attempt whose lease was reclaimed stores nothing.
	Live []LiveOutput
	// LiveEnded are attempts among Results whose output Live stored
	// before: their rows are deleted (Output is not read).
	LiveEnded []LiveOutput
}

// PoolTxResult is what a PoolTx did.
type PoolTxResult struct {
	// Fenced tells per Result whether its fence held (the job still ran under
	// that owner and attempt); a failed one records a stale attempt.
	Fenced    []bool
	Reclaimed []Reclaimed
	// Claimed are in claim order (priority descending, run_at, id), leased to
	// the owner until Now + Claim.Lease.
	Claimed  []*Job
	GaveBack bool // prefetched jobs were given back (see Claim.Prefetch)
	// RateWait is the earliest next start of a bucket that held back a
	// ready job (see Claim.Rated), or zero.
	RateWait time.Time
}

// Result is an attempt's end, for a PoolTx to record, fenced on (id, owner,
// attempt, running): a worker whose lease was reclaimed changes nothing.
type Result struct {
	Job      *Job    // as claimed: ID, Owner and Attempt are the fence
	Worker   string  // the worker that ran it, recorded with the attempt
	Outcome  Outcome // done, retry, dead, released or cancelled
	Error    string  // capped at MaxOutput bytes by the store
	Output   string
	RetryAt  time.Time // for retry: when to run again
	Started  time.Time
	Finished time.Time
	TimedOut bool // the type's timeout ended it; not stored, for observers
}

// Presence is a pool's row in the pools table.
type Presence struct {
	Types    []string // the types it has handlers for
	Versions Versions // the payload versions it runs
	Process  Process
	Workers  int  // how many jobs the pool runs at once
	First    bool // the pool's first write, which also forgets pools gone for PresenceKept
}

// Claim asks for up to N jobs ready at PoolTx.Now: of Types, plus up to
// Limited[t] of each limited type t, of accepted Versions. Others stay
// pending, attempts unspent.
type Claim struct {
	Lease    time.Duration
	N        int
	Types    []string
	Limited  map[string]int
	Versions Versions
	// Prefetch is how many of the N are claimed ahead of a free worker. A
	// crash spends every claimed job's attempt, so past the first N−Prefetch
	// the claim keeps only the jobs before the first one on its last attempt
	// and gives the rest back (PoolTxResult.GaveBack).
	Prefetch int
	// StopBeforeLast reads the ready jobs first, to stop before a last
	// attempt rather than take and give back.
	StopBeforeLast bool
	// Rated are the rate-limited types, in no other list, claimed last within
	// N and their buckets (see RateLimit).
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

// AttemptRows returns the attempt rows of results rs, ok telling whose fence
// held: a lost lease records a stale attempt, a silent completion none (the
// job's row records it).
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
