package schedule

import (
	"bytes"
	"slices"
)

// Diff is what a reload changes: schedule names, each list sorted.
type Diff struct {
	Added   []string // in the new configuration only
	Changed []string // in both, with any key different
	Removed []string // in the old configuration only
}

// Empty reports whether d changes no schedule.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Changed) == 0 && len(d.Removed) == 0
}

// Compare returns the schedules that differ between old and new. Either may
// be nil, meaning no schedules. Changes to tasks are not listed: they take
// effect for jobs made after the reload.
func Compare(old, new *Config) Diff {
	var d Diff
	for _, s := range schedules(new) {
		o, ok := lookup(old, s.Name)
		switch {
		case !ok:
			d.Added = append(d.Added, s.Name)
		case !sameSchedule(o, s):
			d.Changed = append(d.Changed, s.Name)
		}
	}
	for _, o := range schedules(old) {
		if _, ok := lookup(new, o.Name); !ok {
			d.Removed = append(d.Removed, o.Name)
		}
	}
	slices.Sort(d.Added)
	slices.Sort(d.Changed)
	slices.Sort(d.Removed)
	return d
}

func schedules(c *Config) []*Schedule {
	if c == nil {
		return nil
	}
	return c.Schedules
}

func lookup(c *Config, name string) (*Schedule, bool) {
	if c == nil {
		return nil, false
	}
	return c.Schedule(name)
}

// sameSchedule compares the keys of two schedules; payload and for_each
// through the jobs' payloads they make, which are JSON.
func sameSchedule(a, b *Schedule) bool {
	return a.Cron == b.Cron &&
		a.Location.String() == b.Location.String() &&
		a.Task == b.Task &&
		a.CatchUp == b.CatchUp &&
		a.CatchUpLimit == b.CatchUpLimit &&
		a.Overlap == b.Overlap &&
		slices.EqualFunc(a.items, b.items, func(x, y Item) bool {
			return x.ID == y.ID && bytes.Equal(x.Payload, y.Payload)
		})
}
