package cron

import "time"

// stepUncached is step without the memo.
func (s *Expr) stepUncached(after time.Time) (time.Time, bool) {
	at := s.scan(after)
	dst := !at.IsZero() && !s.elapsed && s.repeated(at)
	bound := at
	if bound.IsZero() {
		bound = after.AddDate(neverFiresHorizon+1, 0, 0)
	}
	// Spring-forward gaps add runs the scan cannot see; one starting
	// before after can hold an elapsed expression's run after it.
	if start := s.transitionAtOrBefore(after); !start.IsZero() {
		if g := s.gapRun(start, after); !g.IsZero() && !g.After(bound) {
			at, dst, bound = g, false, g
		}
	}
	for t := s.transitionAfter(after); !t.IsZero() && !t.After(bound); t = s.transitionAfter(t) {
		if g := s.gapRun(t, after); !g.IsZero() && !g.After(bound) {
			at, dst, bound = g, false, g
		}
	}
	if at.IsZero() {
		return time.Time{}, false
	}
	return at.In(s.loc), dst
}

// scan returns the first instant after after whose wall time matches.
// It walks zone periods, in each of which the offset is fixed.
func (s *Expr) scan(after time.Time) time.Time {
	from, inclusive := after, false
	limit := after.Year() + 2*neverFiresHorizon
	for from.Year() <= limit {
		offset := s.offset(from)
		end := s.transitionAfter(from)
		wall := from.UTC().Add(offset)
		if inclusive {
			wall = wall.Add(-time.Nanosecond)
		}
		next := s.nextWall(wall)
		if next.IsZero() {
			return time.Time{}
		}
		at := next.Add(-offset)
		if end.IsZero() || at.Before(end) {
			return at
		}
		from, inclusive = end, true
	}
	return time.Time{}
}

// nextWall returns the first wall time after wall (both carried as UTC)
// that matches, or zero if none does within about 15 years.
func (s *Expr) nextWall(wall time.Time) time.Time {
	for range 3 {
		if n := s.fields.Next(wall); !n.IsZero() {
			return n
		}
		// robfig's Next gives up after five calendar years.
		wall = time.Date(wall.Year()+5, 12, 31, 23, 59, 59, 0, time.UTC)
	}
	return time.Time{}
}

func (s *Expr) offset(t time.Time) time.Duration {
	_, off := t.In(s.loc).Zone()
	return time.Duration(off) * time.Second
}

// offsetsAt returns the zone offsets just before and at the transition t.
func (s *Expr) offsetsAt(t time.Time) (before, after time.Duration) {
	return s.offset(t.Add(-time.Nanosecond)), s.offset(t)
}

const maxZonePeriods = 1000

// transitionAfter returns the first instant after t at which the offset
// changes, or zero. Time.ZoneBounds is only a guide: it reports bounds
// where nothing changes, and past a zone's listed transitions it can
// return an end not after t.
func (s *Expr) transitionAfter(t time.Time) time.Time {
	off := s.offset(t)
	for cur, n := t, 0; n < maxZonePeriods; n++ {
		_, end := cur.In(s.loc).ZoneBounds()
		if end.IsZero() {
			return time.Time{}
		}
		if !end.After(cur) {
			end = cur.Add(24 * time.Hour)
		}
		if s.offset(end) != off {
			return s.firstChange(cur, end, off)
		}
		cur = end
	}
	return time.Time{}
}

// transitionAtOrBefore returns the last offset change at or before t, or zero.
func (s *Expr) transitionAtOrBefore(t time.Time) time.Time {
	off := s.offset(t)
	for cur, n := t, 0; n < maxZonePeriods; n++ {
		start, _ := cur.In(s.loc).ZoneBounds()
		if start.IsZero() {
			return time.Time{}
		}
		if start.After(cur) {
			start = cur.Add(-24 * time.Hour)
		}
		prev := start.Add(-time.Nanosecond)
		if s.offset(prev) != off {
			return s.firstChange(prev, start, off)
		}
		cur = prev
	}
	return time.Time{}
}

// firstChange bisects (lo, hi] for the first instant whose offset is not
// off; hi's is not. Offsets change on whole seconds.
func (s *Expr) firstChange(lo, hi time.Time, off time.Duration) time.Time {
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if !mid.After(lo) {
			break
		}
		if s.offset(mid) == off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// repeated reports whether at repeats its wall time after a fall-back.
func (s *Expr) repeated(at time.Time) bool {
	start := s.transitionAtOrBefore(at)
	if start.IsZero() {
		return false
	}
	before, after := s.offsetsAt(start)
	return before > after && at.Before(start.Add(before-after))
}

// gapRun returns the run after after that a spring-forward at t adds: the
// jump itself when a wall time in the gap matches, or for an elapsed
// expression the first match in the gap at the offset before the jump.
func (s *Expr) gapRun(t, after time.Time) time.Time {
	before, afterOff := s.offsetsAt(t)
	if afterOff <= before {
		return time.Time{}
	}
	lo, hi := t.UTC().Add(before), t.UTC().Add(afterOff) // the missing wall times: [lo, hi)
	if !s.elapsed {
		if !t.After(after) {
			return time.Time{}
		}
		if n := s.nextWall(lo.Add(-time.Nanosecond)); !n.IsZero() && n.Before(hi) {
			return t
		}
		return time.Time{}
	}
	from := lo.Add(-time.Nanosecond)
	if a := after.UTC().Add(before); !a.Before(from) {
		from = a
	}
	if n := s.nextWall(from); !n.IsZero() && n.Before(hi) {
		return n.Add(-before)
	}
	return time.Time{}
}
