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

// parser accepts 5 fields, or 6 with seconds first, and descriptors. Only
// its parser is used: instants are computed by Expr.
var parser = robfig.NewParser(robfig.SecondOptional | robfig.Minute | robfig.Hour |
	robfig.Dom | robfig.Month | robfig.Dow | robfig.Descriptor)

// allHours is the hour field of an expression that fires in every hour of
// the day.
const allHours = 1<<24 - 1

// neverFiresHorizon is how far ahead, in years, Parse looks for a first
// instant. An expression that can fire at all does so within it (29
// February, across a century that skips a leap year).
const neverFiresHorizon = 8

// ErrNeverFires is wrapped by the error Parse returns for a calendar
// expression that has no instant at all, such as "0 0 31 2 *".
var ErrNeverFires = errors.New("spec never fires")

// Expr is a parsed cron expression bound to a time zone: it computes the
// instants at which a schedule fires. An Expr is immutable and safe for
// concurrent use.
//
// # Expressions
//
// An expression is 5 fields (minute hour day-of-month month day-of-week),
// or 6 with a seconds field first; a descriptor (@yearly, @annually,
// @monthly, @weekly, @daily, @midnight, @hourly); or "@every D" with D a Go
// duration of at least one second, in whole seconds. A "CRON_TZ=Zone " (or
// "TZ=Zone ") prefix names the zone the fields are read in.
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
//     occurrence; the second occurrence is a skipped instant (Instant.DST).
//     "30 1 * * *" in New York on 1 November 2026 runs at 01:30 EDT, not
//     again at 01:30 EST.
//   - A wall time that does not exist (spring-forward) runs once at the
//     instant of the jump, as ISC cron does, instead of being lost.
//     "30 2 * * *" in New York on 8 March 2026 runs at 03:00 EDT. Several
//     wall times inside one gap collapse into that single run.
//   - Expressions whose hour field is "*" keep their real elapsed cadence
//     instead: they fire at every instant whose wall time matches, so
//     "*/15 * * * *" fires every 15 real minutes and "0 * * * *" every real
//     hour through both transitions, including at 01:00 EDT and 01:00 EST
//     on a fall-back day. A wall time such an expression loses in a gap
//     runs at the instant it would have had without the jump (read with
//     the offset in force before it); after a whole-hour jump that instant
//     is a regular run already, so nothing is added, while after the
//     30-minute jump of Australia/Lord_Howe "0 * * * *" still runs one real
//     hour after 01:00, at 02:30 LHDT.
//   - Every other expression follows the first two rules however often it
//     fires: "*/15 0-3 * * *" on the New York fall-back night runs at 01:45
//     EDT, skips 01:00-01:45 EST, and runs next at 02:00 EST, 75 real
//     minutes later.
//
// "@every D" ignores zones and wall clocks: it fires every D of real time
// counted from an anchor, which the beat keeps in the schedule's durable
// cursor (see NextFrom).
type Expr struct {
	expr    string
	loc     *time.Location
	every   time.Duration        // "@every D"; zero for calendar expressions
	fields  *robfig.SpecSchedule // the fields, with Location UTC: matched against wall-clock time with no DST
	elapsed bool                 // the hour field matches every hour

	last atomic.Pointer[stepMemo] // the latest step computed; see step
}

// stepMemo records that the first instant of an Expr's series after any
// time in [from, at) is at (a daylight-saving skip when dst).
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

// Every returns the period of an "@every" expression, and zero for a
// calendar expression.
func (s *Expr) Every() time.Duration { return s.every }

// Next returns the first instant after after at which s fires, in s's
// zone, or the zero time if there is none within 8 years. For "@every D" it
// is after+D: the caller anchors the series by passing the previous
// instant. Instants skipped under the daylight-saving rules are not
// returned.
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

// step returns the first instant of the series after after, run or
// daylight-saving skip. Calendar expressions only.
//
// The last answer is kept (Expr.last): each pass of the beat asks every
// schedule for the instant after its cursor, which the previous pass asked
// already as the instant after its own now, and then for the instant after
// now, which the walk over the due instants has just found. Matching the
// cron fields and the zone's transitions is the costliest part of a pass's
// own work; with the memo it runs once per schedule and pass. The answer
// for after holds for every time from after up to the instant it returns,
// since no instant of the series lies between.
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
