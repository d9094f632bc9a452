package cron

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	_ "time/tzdata" // zones come from the binary, not from the host's database

	robfig "github.com/robfig/cron/v3"
)

// parser accepts 5 fields, 6 with seconds first, and descriptors. Expr
// computes the instants; robfig only parses.
var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour |
	robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// allHours is the hour field that matches every hour.
const allHours = 1<<24 - 1

// neverFiresHorizon is how far ahead, in years, Parse looks for a first
// instant. It covers 29 February across a century without a leap year.
const neverFiresHorizon = 8

// ErrNeverFires is wrapped by the error Parse returns for a calendar
// expression that has no instant at all, such as "0 0 31 2 *".
var ErrNeverFires = errors.New("spec never fires")

// Expr is a parsed cron expression bound to a time zone. It is immutable
// and safe for concurrent use.
//
// # Expressions
//
// An expression is 5 fields (minute hour day-of-month month day-of-week),
// or 6 with seconds first; a descriptor (@yearly, @annually, @monthly,
// @weekly, @daily, @midnight, @hourly); or "@every D", D a Go duration of
// whole seconds, at least one. A "CRON_TZ=Zone " (or "TZ=Zone ") prefix
// names the zone the fields are read in.
//
// A field is "*", a number or a range N-M, each with an optional step /S,
// or a comma-separated list of these; N/S runs to the field's end. Months
// and weekdays take names; weekdays 0 and 7 are Sunday. As in cron, a day
// matches when its day of month or its weekday does, unless one of them
// is "*" (or "?"): then the other decides. Forms that parsers read
// differently ("*-5", "5-", "-5", "3/", "*/0", empty list elements) are
// errors.
//
// # Daylight saving
//
// Fields match the zone's wall clock. Where the zone's offset changes:
//
//   - A wall time that occurs twice (fall-back) runs at its first
//     occurrence; the second is a skipped instant (Instant.DST).
//   - A wall time that does not exist (spring-forward) runs once at the
//     jump, as ISC cron does. Several wall times in one gap make one run.
//   - An expression whose hour field is "*" keeps its real cadence
//     instead: it fires at every instant whose wall time matches, so
//     "0 * * * *" runs every real hour through both transitions. A wall
//     time lost in a gap runs when it would have without the jump, which
//     after a whole-hour jump is already a regular run.
//   - Every other expression follows the first two rules however often it
//     fires: "*/15 0-3 * * *" on a fall-back night skips the repeated hour.
//
// "@every D" ignores zones: it fires every D of real time from an anchor,
// which the beat keeps in the schedule's cursor (see NextFrom).
type Expr struct {
	expr    string
	loc     *time.Location
	every   time.Duration        // "@every D"; zero for calendar expressions
	fields  *robfig.SpecSchedule // in UTC: matched against wall times
	elapsed bool                 // the hour field matches every hour

	last atomic.Pointer[stepMemo] // the latest step computed; see step
}

// stepMemo: the first instant after any time in [from, at) is at.
type stepMemo struct {
	from, at time.Time
	dst      bool
}

// Parse parses expr, reading its fields in loc unless expr starts with a
// CRON_TZ= prefix. A nil loc means UTC. The error wraps ErrNeverFires for
// an expression that cannot fire.
func Parse(expr string, loc *time.Location) (*Expr, error) {
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
	s := &Expr{expr: expr, loc: loc}
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
	parsed, err := parser.Parse(fields)
	if err != nil {
		return nil, err
	}
	sched, ok := parsed.(*robfig.SpecSchedule)
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

// String returns the expression as given to Parse.
func (s *Expr) String() string { return s.expr }

// Location returns the zone the fields are read in.
func (s *Expr) Location() *time.Location { return s.loc }

// Every returns an "@every" expression's period; zero for calendar ones.
func (s *Expr) Every() time.Duration { return s.every }

// Next returns the first run after after, in s's zone, or the zero time
// if there is none within 8 years. Daylight-saving skips are not runs.
// For "@every D" it is after+D: pass the previous instant.
func (s *Expr) Next(after time.Time) time.Time {
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

// step returns the first instant after after, run or DST skip, of a
// calendar expression. It keeps its last answer, which holds up to the
// instant returned: each beat pass asks again what was just found, and
// matching fields and transitions is the costliest part of a pass.
func (s *Expr) step(after time.Time) (time.Time, bool) {
	if m := s.last.Load(); m != nil && !after.Before(m.from) && after.Before(m.at) {
		return m.at, m.dst
	}
	at, dst := s.stepUncached(after)
	if !at.IsZero() {
		s.last.Store(&stepMemo{from: after, at: at, dst: dst})
	}
	return at, dst
}
