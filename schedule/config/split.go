package config

import (
	"strings"
	"text/template"

	"github.com/BurntSushi/toml"
)

// A file of many schedules decodes to many times its size at once, so a
// valid file is decoded in parts: the document without its [[schedule]]
// tables, then those tables a run at a time (see scheduleRun), each run's
// decoding dropped before the next. Parts decode as the whole document
// would only when the file holds no problem, so any problem, and any
// layout the locator cannot cut, sends Parse back to decoding the whole
// document, which reports every problem as it always has.

// scheduleRuns holds a run of [[schedule]] tables decoded on its own.
type scheduleRuns struct {
	Schedule []toml.Primitive `toml:"schedule"`
}

// loadInRuns loads the file in parts; nil when it found a problem or
// cannot cut the file, and the whole document must be decoded instead.
func (l *loader) loadInRuns() *Config {
	cut := cutRuns(l.data)
	if cut.orphan || len(cut.runs) == 0 {
		return nil
	}
	rest := l.rest(cut.runs)
	l.loc = locate(rest)
	var raw rawFile
	md, err := toml.Decode(rest, &raw)
	if err != nil || present(raw.Schedule) {
		return nil
	}
	l.md = md
	failed := false
	cfg := l.loadTables(raw, func(cfg *Config, templates map[string][]*template.Template) {
		head, headTwins, headLoc := l.md, l.twins, l.loc
		defer func() { l.md, l.twins, l.loc = head, headTwins, headLoc }()
		var sl scheduleList
		for _, r := range cut.runs {
			if failed = !l.loadRun(r, cfg, templates, &sl); failed {
				return
			}
		}
		l.linkDownstream(cfg, sl.downstream)
	})
	if failed || len(l.errs) > 0 {
		return nil
	}
	return cfg
}

// loadRun decodes and loads run r; false on a problem.
func (l *loader) loadRun(r scheduleRun, cfg *Config, templates map[string][]*template.Template, sl *scheduleList) bool {
	var runs scheduleRuns
	md, err := toml.Decode(l.data[r.start:r.end], &runs)
	if err != nil || len(runs.Schedule) != r.n {
		return false
	}
	l.md, l.loc, l.unplaced = md, nil, &r
	// The run's names are parts of its decoded copy: drop them with it.
	defer func() { l.unplaced = nil; clear(l.names) }()
	l.first = r.first
	defer func() { l.first = 0 }()
	l.findTwins()
	if len(l.twins) > 0 {
		return false
	}
	l.loadScheduleRange(runs.Schedule, r.first, cfg, templates, sl)
	l.checkKeys()
	return len(l.errs) == 0
}

// rest returns the document with runs blanked out, line for
// line.
func (l *loader) rest(runs []scheduleRun) string {
	var sb strings.Builder
	at := 0
	for _, r := range runs {
		sb.WriteString(l.data[at:r.start])
		sb.WriteString(strings.Repeat("\n", strings.Count(l.data[r.start:r.end], "\n")))
		at = r.end
	}
	sb.WriteString(l.data[at:])
	return sb.String()
}
