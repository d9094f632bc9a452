package cron

import (
	"fmt"
	"time"
)

// CatchUp is a schedule's policy for instants missed while nothing ran it:
// downtime, a pause, or a forward jump of the clock.
type CatchUp string

// Catch-up policies. An instant counts as missed when it is materialised
// later than the schedule's grace (misfire_grace), or was passed during a
// pause; instants within the grace of a running schedule always run.
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

// Skip is a due instant that does not run: the repeat of a wall time at a
// fall-back (DST), or else a missed instant that the catch-up policy drops.
type Skip struct {
	At  time.Time
	DST bool
}

// NoGrace, as Plan's grace, makes every due instant missed: none counts as
// on time, so the catch-up policy alone decides.
const NoGrace = -1

// Plan decides which of a schedule's due instants, oldest first, run.
//
// Repeated wall times of a fall-back are skipped (Skip.DST). An instant at
// most grace before now is on time and runs. Later ones are missed, and
// policy decides: CatchUpAll runs the newest limit of them, CatchUpLatest
// the newest one unless an instant on time runs anyway, CatchUpNone none.
// With skipAll every instant is skipped so, on time or not. Runs are in
// time order; skips list those met in the walk over due first, then the
// missed instants the policy drops.
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
	// Late instants precede the on-time ones: keep the runs in order.
	runs = append(append([]time.Time(nil), late[len(late)-keep:]...), runs...)
	return runs, skips
}
