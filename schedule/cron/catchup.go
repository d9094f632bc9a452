package cron

import (
	"fmt"
	"time"
)

// CatchUp is a schedule's policy for missed instants.
type CatchUp string

// Catch-up policies. An instant is missed when materialised later than
// misfire_grace (downtime, a clock jump) or passed during a pause.
const (
	// CatchUpLatest runs the most recent missed instant once, unless an
	// instant on time runs anyway, and skips the others. The default.
	CatchUpLatest CatchUp = "latest"
	// CatchUpAll runs each missed instant, the newest catch_up_limit of
	// them, and skips the older ones.
	CatchUpAll CatchUp = "all"
	// CatchUpNone skips every missed instant.
	CatchUpNone CatchUp = "none"
)

// UnmarshalText accepts "latest", "all" or "none".
func (c *CatchUp) UnmarshalText(b []byte) error {
	switch v := CatchUp(b); v {
	case CatchUpLatest, CatchUpAll, CatchUpNone:
		*c = v
		return nil
	}
	return fmt.Errorf("%q is not a catch-up policy: want latest, all or none", b)
}

// Skip is a due instant that does not run: a fall-back's repeated wall
// time (DST), or a missed instant the policy drops.
type Skip struct {
	At  time.Time
	DST bool
}

// NoGrace, as Plan's grace, makes every due instant missed.
const NoGrace = -1

// Plan decides which of a schedule's due instants, oldest first, run.
//
// Fall-back repeats are skipped (Skip.DST). An instant at most grace
// before now is on time and runs. Older ones are missed, and policy
// decides: CatchUpAll runs the newest limit of them, CatchUpLatest the
// newest unless one on time runs, CatchUpNone none. skipAll skips every
// instant. Runs are in time order; skips list the DST and skipAll ones
// first, then the missed instants dropped.
func Plan(due []Instant, now time.Time, grace time.Duration, policy CatchUp, limit int, skipAll bool) (runs []time.Time, skips []Skip) {
	var late []time.Time
	onTime := 0
	for _, in := range due {
		switch {
		case in.DST:
			skips = append(skips, Skip{At: in.At, DST: true})
		case skipAll:
			skips = append(skips, Skip{At: in.At})
		case grace >= 0 && now.Sub(in.At) <= grace:
			runs = append(runs, in.At)
			onTime++
		default:
			late = append(late, in.At)
		}
	}
	keep := 0
	switch policy {
	case CatchUpAll:
		keep = min(limit, len(late))
	case CatchUpLatest:
		if onTime == 0 && len(late) > 0 {
			keep = 1
		}
	}
	for _, at := range late[:len(late)-keep] {
		skips = append(skips, Skip{At: at})
	}
	// Late instants precede the on-time ones.
	runs = append(append([]time.Time(nil), late[len(late)-keep:]...), runs...)
	return runs, skips
}
