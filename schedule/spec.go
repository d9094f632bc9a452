package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
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
// A field is "*", a number, a range N-M, each with an optional step /S,
// or a comma-separated list of these; N/S runs from N to the end of the
// field. Months and days of the week take names; in the day of week both 0
// and 7 are Sunday. As in cron, a day matches when its day of month or its
// day of week matches, unless one of the two fields is "*" (or "?"): then the
// other alone decides. Forms that cron parsers read in different ways
// ("*-5", "5-", "-5", "3/", "*/0", empty list elements) are errors.
//
// # Daylight saving
//
// Fields are matched against the wall clock of the zone. Where the zone's
// offset changes, the rules are:
//
//   - A wall time that occurs twice (fall-back) runs once, at its first
//     occurrence; the second occurrence is reported as a skipped instant
//     (store.SkipDST). "30 1 * * *" in New York on 1 November 2026 runs at
//     01:30 EDT, not again at 01:30 EST.
//   - A wall time that does not exist (spring-forward) runs once at the
//     instant of the jump, as ISC cron does, instead of being lost.
//     "30 2 * * *" in New York on 8 March 2026 runs at 03:00 EDT. Several
//     wall times inside one gap collapse into that single run.
//   - Specs whose hour field is "*" keep their real elapsed cadence
//     instead: they fire at every instant whose wall time matches, so
//     "*/15 * * * *" fires every 15 real minutes and "0 * * * *" every real
//     hour through both transitions, including at 01:00 EDT and 01:00 EST
//     on a fall-back day. A wall time such a spec loses in a gap runs at the
//     instant it would have had without the jump (read with the offset in
//     force before it); after a whole-hour jump that instant is a regular
//     run already, so nothing is added, while after the 30-minute jump of
//     Australia/Lord_Howe "0 * * * *" still runs one real hour after 01:00,
//     at 02:30 LHDT.
//   - Every other spec follows the first two rules however often it fires:
//     "*/15 0-3 * * *" on the New York fall-back night runs at 01:45 EDT,
//     skips 01:00-01:45 EST, and runs next at 02:00 EST, 75 real minutes
//     later.
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

	last atomic.Pointer[stepMemo] // the latest step computed; see step
}

// stepMemo records that the first instant of a Spec's series after any time
// in [from, at) is at (a daylight-saving skip when dst).
type stepMemo struct {
	from, at time.Time
	dst      bool
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
	fields, err := checkFields(rest)
	if err != nil {
		return nil, err
	}
	parsed, err := cronParser.Parse(fields)
	if err != nil {
		return nil, err
	}
	sched, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("unsupported spec %q", rest)
	}
	civil := *sched
	civil.Location = time.UTC
	s.fields = &civil
	s.elapsed = civil.Hour&allHours == allHours
	from := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if n := s.nextWall(from); n.IsZero() || n.Year() > from.Year()+neverFiresHorizon {
		return nil, ErrNeverFires
	}
	return s, nil
}

// cronField is one field of a cron expression: its name in messages, its
// bounds and the names it accepts.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	secondsField = cronField{name: "seconds", max: 59}
	minuteField  = cronField{name: "minute", max: 59}
	hourField    = cronField{name: "hour", max: 23}
	domField     = cronField{name: "day-of-month", min: 1, max: 31}
	monthField   = cronField{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}}
	// 7 is Sunday too, as in cron, croniter and cron-parser.
	dowField = cronField{name: "day-of-week", max: 7, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}}
)

// checkFields checks the fields of a 5- or 6-field expression strictly and
// returns them as robfig's parser reads them. That parser silently reads
// "*-5" as "*" and drops empty list items; its other messages name neither
// the field nor the fix. It also knows no day-of-week 7, which checkFields
// rewrites as 0. Descriptors and other field counts are returned as they
// are, for the parser to handle.
func checkFields(expr string) (string, error) {
	f := strings.Fields(expr)
	var kinds []cronField
	switch {
	case strings.HasPrefix(expr, "@"):
		return expr, nil
	case len(f) == 5:
		kinds = []cronField{minuteField, hourField, domField, monthField, dowField}
	case len(f) == 6:
		kinds = []cronField{secondsField, minuteField, hourField, domField, monthField, dowField}
	default:
		return expr, nil
	}
	for i, k := range kinds {
		v, err := k.check(f[i])
		if err != nil {
			return "", fmt.Errorf("%s field %q: %w", k.name, f[i], err)
		}
		f[i] = v
	}
	return strings.Join(f, " "), nil
}

// check checks one field, a comma-separated list, and returns it with any
// day-of-week 7 rewritten as 0.
func (k cronField) check(field string) (string, error) {
	items := strings.Split(field, ",")
	for i, item := range items {
		lo, hi, step, err := k.item(item)
		if err != nil {
			if len(items) > 1 {
				err = fmt.Errorf("%q: %w", item, err)
			}
			return "", err
		}
		if hi == 7 && k.max == 7 {
			var days []string
			for d := lo; d <= hi; d += step {
				days = append(days, strconv.Itoa(d%7))
			}
			items[i] = strings.Join(days, ",")
		}
	}
	return strings.Join(items, ","), nil
}

// item parses one element of a list: "*", "?", N, N-M, each with an
// optional "/S". N/S means N-max/S. For "*" it returns the bounds without 7
// for the day of week, which needs no rewriting.
func (k cronField) item(s string) (lo, hi, step int, err error) {
	if s == "" {
		return 0, 0, 0, errors.New("empty element in a list (two commas, or a comma at an end)")
	}
	base, stepText, hasStep := strings.Cut(s, "/")
	step = 1
	if hasStep {
		switch n, ok := digits(stepText); {
		case stepText == "":
			return 0, 0, 0, errors.New("nothing after \"/\": write a step such as */5")
		case !ok:
			return 0, 0, 0, fmt.Errorf("step %q is not a number", stepText)
		case n == 0:
			return 0, 0, 0, errors.New("a step of 0 never advances: want 1 or more")
		default:
			step = n
		}
	}
	lowText, highText, isRange := strings.Cut(base, "-")
	switch {
	case base == "*" || base == "?":
		return k.min, k.top(), step, nil
	case base == "":
		return 0, 0, 0, errors.New("nothing before \"/\": write */N for every N, or a number or range before it")
	case lowText == "*" || lowText == "?":
		return 0, 0, 0, fmt.Errorf("a range cannot start at %q: write %q for every %s, or N-M", lowText, "*", k.name)
	case lowText == "":
		return 0, 0, 0, errors.New("the range has no start (negative numbers are not allowed)")
	case isRange && highText == "":
		return 0, 0, 0, errors.New("the range has no end")
	}
	if lo, err = k.value(lowText); err != nil {
		return 0, 0, 0, err
	}
	switch {
	case isRange:
		if hi, err = k.value(highText); err != nil {
			return 0, 0, 0, err
		}
		if lo > hi {
			return 0, 0, 0, errors.New("the range starts after it ends")
		}
	case hasStep:
		// robfig's extension: N/S runs from N to the field's end.
		hi = max(lo, k.top())
	default:
		hi = lo
	}
	return lo, hi, step, nil
}

// top is the end of the field's range as "*" and N/S read it: Saturday, not
// the second Sunday, for the day of week.
func (k cronField) top() int {
	if k.max == 7 {
		return 6
	}
	return k.max
}

// value parses a number or a name of the field and checks its bounds.
func (k cronField) value(s string) (int, error) {
	if n, ok := k.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, ok := digits(s)
	switch {
	case !ok:
		return 0, fmt.Errorf("%q is not a number", s)
	case n < k.min:
		return 0, fmt.Errorf("%d is below the minimum %d", n, k.min)
	case n > k.max:
		return 0, fmt.Errorf("%d is above the maximum %d", n, k.max)
	}
	return n, nil
}

// digits parses a non-empty string of ASCII digits (no sign) of at most 4.
func digits(s string) (int, bool) {
	if s == "" || len(s) > 4 {
		return 0, false
	}
	n := 0
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
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
//
// The last answer is kept (Spec.last), for throughput: each pass of the
// beat asks every schedule for the instant after its cursor, which the
// previous pass asked already as the instant after its own now, and then
// for the instant after now, which the walk over the due instants has just
// found. The matching of the cron fields and the zone's transitions cost
// more than the rest of the beat's own work in a pass of many schedules
// (the store's aside); with the memo they run once per schedule and pass
// instead of three times. The answer for
// after holds for every time from after up to the instant it returns,
// since no instant of the series lies between.
func (s *Spec) step(after time.Time) (time.Time, bool) {
	if m := s.last.Load(); m != nil && !after.Before(m.from) && after.Before(m.at) {
		return m.at, m.dst
	}
	at, dst := s.stepUncached(after)
	if !at.IsZero() {
		s.last.Store(&stepMemo{from: after, at: at, dst: dst})
	}
	return at, dst
}

// stepUncached is step without the memo.
func (s *Spec) stepUncached(after time.Time) (time.Time, bool) {
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

// Marks of the runs that a daylight-saving rule acted on; see Spec.
const (
	// DSTMoved marks a run whose wall time did not exist (spring-forward):
	// it runs at the jump, or for a spec whose hour field is "*" at the
	// instant it would have had without the jump.
	DSTMoved = "moved"
	// DSTFolded marks a run at a wall time that occurs twice (fall-back):
	// the first occurrence, whose repeat is skipped, or for a spec whose
	// hour field is "*" the second occurrence, which runs too.
	DSTFolded = "folded"
)

// dstMark reports whether a daylight-saving rule acted on the run at of s,
// and how, in words. at must be an instant that Next returned.
func (s *Spec) dstMark(at time.Time) (mark, note string) {
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

// matches reports whether the wall time wall (carried as UTC) matches the
// fields.
func (s *Spec) matches(wall time.Time) bool {
	return s.nextWall(wall.Add(-time.Nanosecond)).Equal(wall)
}

// wallClock formats a wall time (carried as UTC) as 15:04, or 15:04:05
// when it has seconds.
func wallClock(wall time.Time) string {
	if wall.Second() != 0 {
		return wall.Format("15:04:05")
	}
	return wall.Format("15:04")
}

// warning returns what is probably a mistake in s, or "". One rule: six
// fields whose seconds field is 0, whose minute field is a single number
// that could be an hour (0-23) and whose hour field is "*", such as
// "0 3 * * * *". That is minute 3 of every hour, 24 runs a day; the writer
// most likely meant the five-field "0 3 * * *", 03:00 daily, with one "*"
// too many. The same runs written with five fields ("3 * * * *") raise no
// warning.
func (s *Spec) warning() string {
	if s.every > 0 {
		return ""
	}
	_, rest, err := splitZone(s.expr)
	if err != nil {
		return ""
	}
	f := strings.Fields(rest)
	if len(f) != 6 || f[2] != "*" {
		return ""
	}
	sec, ok := digits(f[0])
	if !ok || sec != 0 {
		return ""
	}
	minute, ok := digits(f[1])
	if !ok || minute > 23 {
		return ""
	}
	prefix := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s.expr), rest))
	if prefix != "" {
		prefix += " "
	}
	meant := prefix + strings.Join(append([]string{f[0], f[1]}, f[3:]...), " ")
	hourly := prefix + strings.Join(append([]string{f[1], "*"}, f[3:]...), " ")
	return fmt.Sprintf("%q has six fields, so the first is seconds: it runs at minute %d of every hour, 24 times a day; "+
		"for %02d:00 write %q (for minute %d of every hour, write %q, which raises no warning)",
		s.expr, minute, minute, meant, minute, hourly)
}
