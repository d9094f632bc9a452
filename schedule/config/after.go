package config

import (
	"maps"
	"slices"

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

// linkDownstream checks that each downstream schedule follows a schedule
// with cron that no other follows, and records it in cfg.Downstream.
func (l *loader) linkDownstream(cfg *Config, downstream []downstreamAt) {
	if len(downstream) == 0 {
		return
	}
	cfg.Downstream = map[string]*Schedule{}
	isDown := map[string]bool{}
	for _, d := range downstream {
		isDown[d.s.Name] = true
	}
	for _, d := range downstream {
		s := d.s
		w := where{table: "schedule", job: s.Name, path: []string{"schedule", elem(d.i), "after"}, field: "after"}
		_, known := cfg.byName[s.After]
		switch {
		case s.After == s.Name:
			l.errorf(w, "schedule %q cannot follow itself", s.After)
		case isDown[s.After]:
			l.errorf(w, "schedule %q has after itself: a chain of after is not supported yet", s.After)
		case !known:
			l.errorf(w, "unknown schedule %q%s", s.After, suggest.Hint(s.After, slices.Sorted(maps.Keys(cfg.byName))))
		case cfg.Downstream[s.After] != nil:
			l.errorf(w, "schedule %q already has %q after it: one schedule may follow each", s.After, cfg.Downstream[s.After].Name)
		default:
			cfg.Downstream[s.After] = s
		}
	}
}
