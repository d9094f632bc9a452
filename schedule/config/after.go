package config

import (
	"maps"
	"slices"
	"strings"

	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// The values of a schedule's require.
const (
	RequireEnded = "ended" // run whatever the upstream jobs' outcomes
	RequireDone  = "done"  // run only if every upstream job ended done
)

// downstreamAt is a schedule with after and its position in the file.
type downstreamAt struct {
	s *Schedule
	i int
}

// loadAfter decodes a downstream schedule's after and require; it has no
// cron, timezone, catch-up or overlap of its own, and one item.
func (l *loader) loadAfter(raw rawSchedule, s *Schedule, w where) {
	if present(raw.Cron) {
		l.errorf(w.with("after"), "a schedule has either cron or after, not both")
	}
	if !present(raw.After) {
		l.errorf(w.with("after"), "missing: require applies to a schedule with after")
	} else if l.decode(raw.After, &s.After, w.with("after")) && !validName(s.After) {
		l.errorf(w.with("after"), "name %q: %s", s.After, nameRule)
		s.After = ""
	}
	s.Require = RequireEnded
	if present(raw.Require) && l.decode(raw.Require, &s.Require, w.with("require")) &&
		s.Require != RequireEnded && s.Require != RequireDone {
		l.errorf(w.with("require"), "%q: want %q or %q", s.Require, RequireEnded, RequireDone)
	}
	for _, k := range []struct {
		name    string
		present bool
	}{{"timezone", present(raw.Timezone)}, {"catch_up", present(raw.CatchUp)}, {"catch_up_limit", present(raw.CatchUpLimit)},
		{"overlap", present(raw.Overlap)}, {"for_each", present(raw.ForEach)}} {
		if k.present {
			l.errorf(w.with(k.name), "a schedule with after runs once per upstream instant: %s does not apply", k.name)
		}
	}
}

// linkDownstream checks that each downstream schedule follows a known
// schedule and that following after from it reaches a schedule with cron,
// and records it in cfg.Downstream in file order.
func (l *loader) linkDownstream(cfg *Config, downstream []downstreamAt) {
	if len(downstream) == 0 {
		return
	}
	cfg.Downstream = map[string][]*Schedule{}
	after := map[string]string{} // downstream name -> its upstream
	for _, d := range downstream {
		after[d.s.Name] = d.s.After
	}
	known := slices.Collect(maps.Keys(cfg.byName))
	for name := range after {
		known = append(known, name)
	}
	slices.Sort(known)
	inCycle := map[string]bool{} // reported once, at the cycle's first schedule
	for _, d := range downstream {
		s := d.s
		w := where{table: "schedule", job: s.Name, path: []string{"schedule", elem(d.i), "after"}, field: "after"}
		_, isDown := after[s.After]
		_, isCron := cfg.byName[s.After]
		switch {
		case s.After == "":
		case s.After == s.Name:
			l.errorf(w, "schedule %q cannot follow itself", s.After)
		case !isDown && !isCron:
			l.errorf(w, "unknown schedule %q%s", s.After, suggest.Hint(s.After, known))
		case inCycle[s.Name]:
		case cycle(after, s.Name) != nil:
			c := cycle(after, s.Name)
			for _, n := range c {
				inCycle[n] = true
			}
			l.errorf(w, "a cycle of after: %s", strings.Join(c, " after "))
		default:
			cfg.Downstream[s.After] = append(cfg.Downstream[s.After], s)
		}
	}
	for _, f := range cfg.Followers() {
		f.Location = cfg.Origin(f).Location // its instants are its origin's
	}
}

// Origin returns the schedule with cron at the head of s's chain of after:
// s itself when it has none, nil when the chain leads nowhere.
func (c *Config) Origin(s *Schedule) *Schedule {
	for range len(c.Downstream) + 1 {
		if s.After == "" {
			return s
		}
		up, ok := c.byName[s.After]
		if !ok {
			up, ok = c.Follower(s.After)
		}
		if !ok {
			return nil
		}
		s = up
	}
	return nil
}

// cycle returns the cycle of after that name is in, from name to name
// again, or nil when following after from name leaves the downstream
// schedules.
func cycle(after map[string]string, name string) []string {
	path := []string{name}
	for n := after[name]; ; n = after[n] {
		if _, down := after[n]; !down {
			return nil
		}
		if n == name {
			return append(path, n)
		}
		if slices.Contains(path, n) {
			return nil // a cycle further up, reported on its own schedules
		}
		path = append(path, n)
	}
}

// Followers returns the schedules with after, depth first from the
// schedules with cron in file order: each comes after the one it follows.
func (c *Config) Followers() []*Schedule {
	var out []*Schedule
	var walk func(name string)
	walk = func(name string) {
		for _, d := range c.Downstream[name] {
			out = append(out, d)
			walk(d.Name)
		}
	}
	for _, s := range c.Schedules {
		walk(s.Name)
	}
	return out
}

// Follower returns the schedule with after called name.
func (c *Config) Follower(name string) (*Schedule, bool) {
	for _, d := range c.Followers() {
		if d.Name == name {
			return d, true
		}
	}
	return nil, false
}
