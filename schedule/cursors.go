package schedule

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/schedule/alarm"
	"github.com/scheduler-run/scheduler/schedule/config"
)

var _ alarm.Cursors = (*cursorMarks)(nil)

// cursorMarks is what the beat keeps of each schedule's cursor between a
// pass and the alarm evaluation that follows it (see alarm.Cursors), and
// each schedule's pause as the last pass saw it. It holds them in a slice
// parallel to the schedules in name order, where the pass finds a
// schedule's entry by its position, rather than in maps of store.Cursor
// by name, which hold many times the bytes per schedule and make the
// beat's memory grow with the schedules. A name is looked up by binary
// search. Only Run's goroutine uses it.
type cursorMarks struct {
	order  []*config.Schedule // cfg's schedules by name
	cfg    *config.Config     // whose schedules order holds
	marks  []cursorMark       // parallel to order
	others map[string]int64   // cursors read of schedules not in order
}

// cursorMark is one schedule's entry in cursorMarks.
type cursorMark struct {
	before, after int64 // see nanos; valid with markBefore, markAfter
	flags         uint8
}

const (
	markBefore    uint8 = 1 << iota // the pass read a cursor
	markAfter                       // the pass knows the cursor it left
	markPaused                      // the cursor was paused at the last pass
	markPauseSeen                   // a pass has seen the cursor's pause
)

// forConfig returns cfg's schedules by name, rebuilding the marks when cfg
// is not the last one. In that order a batch writes neighbouring index
// pages. Pauses seen carry over by name.
func (m *cursorMarks) forConfig(cfg *config.Config) []*config.Schedule {
	if m.cfg == cfg {
		return m.order
	}
	order := slices.SortedFunc(slices.Values(cfg.Schedules), func(x, y *config.Schedule) int {
		return strings.Compare(x.Name, y.Name)
	})
	marks := make([]cursorMark, len(order))
	for i, s := range order {
		if j, ok := m.find(s.Name); ok {
			marks[i].flags = m.marks[j].flags & (markPaused | markPauseSeen)
		}
	}
	m.order, m.cfg, m.marks = order, cfg, marks
	return order
}

// find returns the position of schedule name in order.
func (m *cursorMarks) find(name string) (int, bool) {
	return slices.BinarySearchFunc(m.order, name, func(s *config.Schedule, n string) int {
		return strings.Compare(s.Name, n)
	})
}

// startPass forgets the cursors of the last pass.
func (m *cursorMarks) startPass() {
	for i := range m.marks {
		m.marks[i].flags &^= markBefore | markAfter
	}
	m.others = nil
}

// read notes schedule i's cursor as the pass read it.
func (m *cursorMarks) read(i int, at time.Time) {
	mk := &m.marks[i]
	mk.before, mk.after = nanos(at), nanos(at)
	mk.flags |= markBefore | markAfter
}

// other notes the cursor of a schedule not in order, as read.
func (m *cursorMarks) other(name string, at time.Time) {
	if m.others == nil {
		m.others = map[string]int64{}
	}
	m.others[name] = nanos(at)
}

// left notes schedule i's cursor as the pass left it.
func (m *cursorMarks) left(i int, at time.Time) {
	m.marks[i].after = nanos(at)
	m.marks[i].flags |= markAfter
}

// pause records schedule i's pause and returns the one seen before, and
// whether one was.
func (m *cursorMarks) pause(i int, paused bool) (was, seen bool) {
	mk := &m.marks[i]
	was, seen = mk.flags&markPaused != 0, mk.flags&markPauseSeen != 0
	mk.flags &^= markPaused
	if paused {
		mk.flags |= markPaused
	}
	mk.flags |= markPauseSeen
	return was, seen
}

// Before implements alarm.Cursors.
func (m *cursorMarks) Before(name string) (time.Time, bool) {
	if i, ok := m.find(name); ok {
		mk := m.marks[i]
		return fromNanos(mk.before), mk.flags&markBefore != 0
	}
	n, ok := m.others[name]
	return fromNanos(n), ok
}

// After implements alarm.Cursors.
func (m *cursorMarks) After(name string) (time.Time, bool) {
	if i, ok := m.find(name); ok {
		mk := m.marks[i]
		return fromNanos(mk.after), mk.flags&markAfter != 0
	}
	n, ok := m.others[name]
	return fromNanos(n), ok
}

// zeroNanos stands for the zero time, which UnixNano cannot give.
const zeroNanos = math.MinInt64

// nanos returns t as Unix nanoseconds, exact for the years 1678 to 2262.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return zeroNanos
	}
	return t.UnixNano()
}

// fromNanos returns the UTC time of nanos' n.
func fromNanos(n int64) time.Time {
	if n == zeroNanos {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
