package cron

import "time"

// Instant is one element of a schedule's series.
type Instant struct {
	At time.Time
	// DST marks a fall-back's repeated wall time: skipped, not run.
	DST bool
}

// maxWindow keeps Between's windows from overflowing.
const maxWindow = 50 * 365 * 24 * time.Hour

// Between returns the instants in (from, to], oldest first, DST skips
// included: the newest keep of them, truncated when there were more. For
// "@every D" the series is from+D, from+2D, ...
func (s *Expr) Between(from, to time.Time, keep int) (out []Instant, truncated bool) {
	if !to.After(from) || keep <= 0 {
		return nil, false
	}
	if s.every > 0 {
		n := int64(to.Sub(from) / s.every)
		first := int64(1)
		if n > int64(keep) {
			first, truncated = n-int64(keep)+1, true
		}
		for k := first; k <= n; k++ {
			out = append(out, Instant{At: from.Add(time.Duration(k) * s.every).In(s.loc)})
		}
		return out, truncated
	}
	// Windows ending at to grow until they reach from or hold more than
	// keep, so years of downtime cost bounded work.
	span := to.Sub(from)
	for w := time.Hour; ; w *= 4 {
		start, complete := to.Add(-w), w >= span || w > maxWindow
		if complete {
			start = from
		}
		out, truncated = s.collect(start, to, keep)
		if truncated || complete {
			return out, truncated
		}
	}
}

// collect returns the newest keep instants in (from, to] and whether there
// were more.
func (s *Expr) collect(from, to time.Time, keep int) ([]Instant, bool) {
	var ring []Instant
	n := 0
	for t := from; ; {
		at, dst := s.step(t)
		if at.IsZero() || at.After(to) {
			break
		}
		if len(ring) < keep {
			ring = append(ring, Instant{At: at, DST: dst})
		} else {
			ring[n%keep] = Instant{At: at, DST: dst}
		}
		n++
		t = at
	}
	if n <= keep {
		return ring, false
	}
	out := make([]Instant, 0, keep)
	out = append(out, ring[n%keep:]...)
	out = append(out, ring[:n%keep]...)
	return out, true
}

// NextFrom returns the first instant after after, run or DST skip; for
// "@every" counted from anchor, the schedule's cursor.
func (s *Expr) NextFrom(anchor, after time.Time) time.Time {
	if s.every > 0 {
		if after.Before(anchor) {
			return anchor.Add(s.every)
		}
		k := after.Sub(anchor)/s.every + 1
		return anchor.Add(k * s.every)
	}
	at, _ := s.step(after)
	return at
}
