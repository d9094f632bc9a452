package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // zones come from the binary, not from the host's database
	"unicode"

	"github.com/robfig/cron/v3"
)

// cronParser accepts 5 fields, or 6 with seconds first, and descriptors.
// Only its parser is used: instants are computed by Spec.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// allHours is the hour field of a spec that fires in every hour of the day.
const allHours = 1<<24 - 1

// neverFiresHorizon is how far ahead ParseSpec looks for a first instant. A
// spec that can fire at all does so within 8 years (29 February, across a
// century that skips a leap year).
const neverFiresHorizon = 8

// ErrNeverFires is wrapped by the error ParseSpec returns for a calendar spec
// that has no instant at all, such as "0 0 31 2 *".
var ErrNeverFires = errors.New("spec never fires")

// Spec is a parsed cron expression bound to a time zone: it computes the
// instants at which a schedule fires. A Spec is immutable and safe for
// concurrent use.
//
// # Expressions
//
// A spec is 5 fields (minute hour day-of-month month day-of-week), or 6 with
// a seconds field first; a descriptor (@yearly, @annually, @monthly, @weekly,
// @daily, @midnight, @hourly); or "@every D" with D a Go duration of at least
// one second, in whole seconds. A "CRON_TZ=Zone " (or "TZ=Zone ") prefix
// names the zone the fields are read in.
//
// # Daylight saving
//
// Fields are matched against the wall clock of the zone. Where the zone's
// offset changes, the rules are:
//
//   - A wall time that occurs twice (fall-back) runs once, at its first
//     occurrence; the second occurrence is reported as a skipped instant
//     (queue.SkipDST). "30 1 * * *" in New York on 1 November 2026 runs at
//     01:30 EDT, not again at 01:30 EST.
//   - A wall time that does not exist (spring-forward) runs once at the
//     instant of the jump, as ISC cron does, instead of being lost.
//     "30 2 * * *" in New York on 8 March 2026 runs at 03:00 EDT. Several
//     wall times inside one gap collapse into that single run.
//   - Hourly and sub-hourly specs, whose hour field matches every hour, keep
//     their real elapsed cadence: they fire at every instant whose wall time
//     matches, so "*/15 * * * *" fires every 15 real minutes and
//     "0 * * * *" every real hour through both transitions, including at
//     01:00 EDT and 01:00 EST on a fall-back day. A wall time such a spec
//     loses in a gap runs at the instant it would have had without the jump
//     (read with the offset in force before it); after a whole-hour jump that
//     instant is a regular run already, so nothing is added, while after the
//     30-minute jump of Australia/Lord_Howe "0 * * * *" still runs one real
//     hour after 01:00, at 02:30 LHDT.
//
// "@every D" ignores zones and wall clocks: it fires every D of real time
// counted from an anchor, which the beat keeps in the schedule's durable
// cursor.
type Spec struct {
	expr    string
	loc     *time.Location
	every   time.Duration      // "@every D"; zero for calendar specs
	fields  *cron.SpecSchedule // the fields, with Location UTC: matched against wall-clock time with no DST
	elapsed bool               // the hour field matches every hour
}

// ParseSpec parses expr, reading its fields in loc unless expr starts with a
// CRON_TZ= prefix. A nil loc means UTC. The error wraps ErrNeverFires for a
// spec that cannot fire.
func ParseSpec(expr string, loc *time.Location) (*Spec, error) {
	tz, rest, err := splitZone(expr)
	if err != nil {
		return nil, err
	}
	if tz != nil {
		loc = tz
	}
	if loc == nil {
		loc = time.UTC
	}
	s := &Spec{expr: expr, loc: loc}
	if d, ok := strings.CutPrefix(rest, "@every"); ok && (d == "" || d[0] == ' ' || d[0] == '\t') {
		s.every, err = parseEvery(strings.TrimSpace(d))
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	parsed, err := cronParser.Parse(rest)
	if err != nil {
		return nil, err
	}
	fields, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unsupported spec %q", rest)
	}
	civil := *fields
	civil.Location = time.UTC
	s.fields = &civil
	s.elapsed = civil.Hour&allHours == allHours
	from := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if n := s.nextWall(from); n.IsZero() || n.Year() > from.Year()+neverFiresHorizon {
		return nil, ErrNeverFires
	}
	return s, nil
}

// splitZone splits a CRON_TZ= or TZ= prefix off expr. robfig's parser needs
// a space after the zone and panics without one, so the prefix is handled
// here.
func splitZone(expr string) (*time.Location, string, error) {
	expr = strings.TrimSpace(expr)
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		rest, ok := strings.CutPrefix(expr, p)
		if !ok {
			continue
		}
		i := strings.IndexFunc(rest, unicode.IsSpace)
		if i < 0 {
			return nil, "", fmt.Errorf("nothing after %s%s", p, rest)
		}
		loc, err := loadZone(rest[:i])
		if err != nil {
			return nil, "", err
		}
		return loc, strings.TrimSpace(rest[i:]), nil
	}
	if expr == "" {
		return nil, "", errors.New("empty spec")
	}
	return nil, expr, nil
}

// hasZonePrefix reports whether expr starts with a CRON_TZ= or TZ= prefix.
func hasZonePrefix(expr string) bool {
	expr = strings.TrimSpace(expr)
	return strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=")
}

// loadZone loads an IANA zone. "Local" and "" are refused: a schedule must not
// depend on the host's settings.
func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("unknown time zone %q: want an IANA name such as Europe/Berlin or UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q%s", name, zoneHint(name))
	}
	return loc, nil
}

func parseEvery(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("@every: %w", err)
	case d < time.Second:
		return 0, fmt.Errorf("@every %s: the period must be at least 1s", s)
	case d%time.Second != 0:
		return 0, fmt.Errorf("@every %s: the period must be whole seconds", s)
	}
	return d, nil
}

// String returns the expression as given to ParseSpec.
func (s *Spec) String() string { return s.expr }

// Location returns the zone the fields are read in.
func (s *Spec) Location() *time.Location { return s.loc }

// Every returns the period of an "@every" spec, and zero for a calendar spec.
func (s *Spec) Every() time.Duration { return s.every }

// Next returns the first instant after after at which s fires, in s's zone,
// or the zero time if there is none within 8 years. For "@every D" it is
// after+D: the caller anchors the series by passing the previous instant.
// Instants skipped under the daylight-saving rules are not returned.
func (s *Spec) Next(after time.Time) time.Time {
	if s.every > 0 {
		return after.Add(s.every).In(s.loc)
	}
	for {
		at, dst := s.step(after)
		if at.IsZero() || !dst {
			return at
		}
		after = at
	}
}

// instant is one element of a schedule's series: a run, or a repeated wall
// time that the daylight-saving rules pass over.
type instant struct {
	at  time.Time
	dst bool
}

// step returns the first instant of the series after after, run or
// daylight-saving skip. Calendar specs only.
func (s *Spec) step(after time.Time) (time.Time, bool) {
	at := s.scan(after)
	dst := !at.IsZero() && !s.elapsed && s.repeated(at)
	bound := at
	if bound.IsZero() {
		bound = after.AddDate(neverFiresHorizon+1, 0, 0)
	}
	// Spring-forward gaps add runs the scan cannot see. A gap starting
	// before after can still hold a run of an elapsed spec after it.
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

// scan returns the first instant after after whose wall time in s's zone
// matches the fields. Within one zone period the wall clock is the instant
// plus a fixed offset, so the search walks period by period.
func (s *Spec) scan(after time.Time) time.Time {
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

// nextWall returns the first wall time after wall (both carried as UTC
// times) that matches the fields, or zero if there is none within about 15
// years.
func (s *Spec) nextWall(wall time.Time) time.Time {
	for range 3 {
		if n := s.fields.Next(wall); !n.IsZero() {
			return n
		}
		// robfig's Next gives up after the fifth calendar year following
		// wall's; nothing matched before the end of that year.
		wall = time.Date(wall.Year()+5, 12, 31, 23, 59, 59, 0, time.UTC)
	}
	return time.Time{}
}

// offset returns the zone's UTC offset at t.
func (s *Spec) offset(t time.Time) time.Duration {
	_, off := t.In(s.loc).Zone()
	return time.Duration(off) * time.Second
}

// offsetsAt returns the zone offsets just before and at the transition t.
func (s *Spec) offsetsAt(t time.Time) (before, after time.Duration) {
	return s.offset(t.Add(-time.Nanosecond)), s.offset(t)
}

// maxZonePeriods bounds the walks over zone periods.
const maxZonePeriods = 1000

// transitionAfter returns the first instant after t at which the zone's
// offset changes, or zero if it never does. Time.ZoneBounds is only a
// guide: it also reports boundaries where nothing changes, and past a
// zone's explicitly listed transitions it can return, on the last UTC day of
// a year, an end that is not after t.
func (s *Spec) transitionAfter(t time.Time) time.Time {
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

// transitionAtOrBefore returns the last instant at or before t at which
// the zone's offset changed, or zero if it never did.
func (s *Spec) transitionAtOrBefore(t time.Time) time.Time {
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

// firstChange returns the first instant in (lo, hi] whose offset is not
// off, given that hi's is not: the transition. Offsets change on whole
// seconds.
func (s *Spec) firstChange(lo, hi time.Time, off time.Duration) time.Time {
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

// repeated reports whether at is the second occurrence of its wall time: it
// lies within a fall-back's shift after the transition.
func (s *Spec) repeated(at time.Time) bool {
	start := s.transitionAtOrBefore(at)
	if start.IsZero() {
		return false
	}
	before, after := s.offsetsAt(start)
	return before > after && at.Before(start.Add(before-after))
}

// gapRun returns the first run after after that the spring-forward at t (if
// it is one) adds: for a calendar spec the transition instant itself when a
// matching wall time falls in the gap; for an elapsed spec the first matching
// wall time in the gap read with the offset before the jump.
func (s *Spec) gapRun(t, after time.Time) time.Time {
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

// maxWindow bounds the windows of between, so that they never overflow.
const maxWindow = 50 * 365 * 24 * time.Hour

// between returns the instants of the series in (from, to], oldest first.
// When there are more than keep, it returns the newest keep and reports
// truncated. For "@every D" the series is from+D, from+2D, ...
func (s *Spec) between(from, to time.Time, keep int) (out []instant, truncated bool) {
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
			out = append(out, instant{at: from.Add(time.Duration(k) * s.every).In(s.loc)})
		}
		return out, truncated
	}
	// Walk windows ending at to, growing until they reach from or hold more
	// than keep instants, so that years of downtime of a per-second spec
	// cost a bounded amount of work.
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
func (s *Spec) collect(from, to time.Time, keep int) ([]instant, bool) {
	var ring []instant
	n := 0
	for t := from; ; {
		at, dst := s.step(t)
		if at.IsZero() || at.After(to) {
			break
		}
		if len(ring) < keep {
			ring = append(ring, instant{at: at, dst: dst})
		} else {
			ring[n%keep] = instant{at: at, dst: dst}
		}
		n++
		t = at
	}
	if n <= keep {
		return ring, false
	}
	out := make([]instant, 0, keep)
	out = append(out, ring[n%keep:]...)
	out = append(out, ring[:n%keep]...)
	return out, true
}
