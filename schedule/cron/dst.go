package cron

import (
	"fmt"
	"time"
)

// Marks of the runs that a daylight-saving rule acted on; see Expr.
const (
	// DSTMoved marks a run whose wall time did not exist (spring-forward).
	DSTMoved = "moved"
	// DSTFolded marks a run at a wall time that occurs twice (fall-back):
	// the first occurrence, or with an hour field "*" also the second.
	DSTFolded = "folded"
)

// DSTMark returns DSTMoved or DSTFolded and a note when a daylight-saving
// rule acted on at, a run Next returned; else two empty strings.
func (s *Expr) DSTMark(at time.Time) (mark, note string) {
	if s.every > 0 {
		return "", ""
	}
	if start := s.transitionAtOrBefore(at); !start.IsZero() {
		before, after := s.offsetsAt(start)
		lo, hi := start.UTC().Add(before), start.UTC().Add(after) // the wall clock jumps from lo to hi
		switch {
		case after > before && !s.elapsed && at.Equal(start):
			if n := s.nextWall(lo.Add(-time.Nanosecond)); !n.IsZero() && n.Before(hi) {
				return DSTMoved, fmt.Sprintf("%s did not exist (clocks jumped from %s to %s): runs at the jump",
					wallClock(n), wallClock(lo), wallClock(hi))
			}
		case after > before && s.elapsed && at.Before(start.Add(after-before)) && !s.matches(at.UTC().Add(after)):
			return DSTMoved, fmt.Sprintf("%s did not exist (clocks jumped from %s to %s): runs when it would have without the jump",
				wallClock(at.UTC().Add(before)), wallClock(lo), wallClock(hi))
		case before > after && s.repeated(at):
			return DSTFolded, fmt.Sprintf("second %s of the day (clocks went back from %s to %s): runs again",
				wallClock(at.UTC().Add(after)), wallClock(lo), wallClock(hi))
		}
	}
	if s.elapsed {
		return "", ""
	}
	if end := s.transitionAfter(at); !end.IsZero() {
		before, after := s.offsetsAt(end)
		if before > after && !at.Before(end.Add(after-before)) {
			return DSTFolded, fmt.Sprintf("%s occurs twice (clocks go back from %s to %s): runs once; the repeat at %s is skipped",
				wallClock(at.UTC().Add(before)), wallClock(end.UTC().Add(before)), wallClock(end.UTC().Add(after)),
				at.Add(before-after).In(s.loc).Format(time.RFC3339))
		}
	}
	return "", ""
}

// matches reports whether wall (carried as UTC) matches the fields.
func (s *Expr) matches(wall time.Time) bool {
	return s.nextWall(wall.Add(-time.Nanosecond)).Equal(wall)
}

// wallClock formats a wall time as 15:04, or 15:04:05 with seconds.
func wallClock(wall time.Time) string {
	if wall.Second() != 0 {
		return wall.Format("15:04:05")
	}
	return wall.Format("15:04")
}
