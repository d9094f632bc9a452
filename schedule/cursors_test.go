package schedule

import (
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// TestCursorMarks: the pass's cursors are found by name, before and after
// the pass, with the cursors of schedules not configured; a pause seen
// carries over to a new config by name, and startPass forgets the cursors.
func TestCursorMarks(t *testing.T) {
	cfg := func(names ...string) *config.Config {
		c := &config.Config{}
		for _, n := range names {
			c.Schedules = append(c.Schedules, &config.Schedule{Name: n})
		}
		return c
	}
	var m cursorMarks
	order := m.forConfig(cfg("c", "a", "b"))
	if got := []string{order[0].Name, order[1].Name, order[2].Name}; got[0] != "a" || got[1] != "b" || got[2] != "c" {
		t.Fatalf("order = %v, want a b c", got)
	}
	m.startPass()
	m.read(1, t0)
	m.left(1, t0.Add(time.Minute))
	m.left(2, t0.Add(time.Hour)) // created by the pass: no cursor read
	m.other("gone", t0)
	m.pause(0, true)
	for _, tt := range []struct {
		name          string
		before, after time.Time
		hasB, hasA    bool
	}{
		{"a", time.Time{}, time.Time{}, false, false},
		{"b", t0, t0.Add(time.Minute), true, true},
		{"c", time.Time{}, t0.Add(time.Hour), false, true},
		{"gone", t0, t0, true, true},
		{"none", time.Time{}, time.Time{}, false, false},
	} {
		if at, ok := m.Before(tt.name); ok != tt.hasB || ok && !at.Equal(tt.before) {
			t.Errorf("Before(%s) = %v, %v; want %v, %v", tt.name, at, ok, tt.before, tt.hasB)
		}
		if at, ok := m.After(tt.name); ok != tt.hasA || ok && !at.Equal(tt.after) {
			t.Errorf("After(%s) = %v, %v; want %v, %v", tt.name, at, ok, tt.after, tt.hasA)
		}
	}
	m.forConfig(cfg("b", "a"))
	if was, seen := m.pause(0, false); !was || !seen {
		t.Errorf("pause of a after a new config = %v, %v; want the pause seen before", was, seen)
	}
	if was, seen := m.pause(1, false); was || seen {
		t.Errorf("pause of b = %v, %v; want none seen", was, seen)
	}
	m.startPass()
	if _, ok := m.After("b"); ok {
		t.Errorf("After(b) found after startPass")
	}
	if _, ok := m.Before("gone"); ok {
		t.Errorf("Before(gone) found after startPass")
	}
}
