package config

import "strings"

// The decoder's strings are parts of its copy of the document, so a
// schedule holding one would keep the whole copy alive. own copies them,
// once for the strings many schedules repeat.

// own gives s copies of its strings: names, cron text and item keys. Its
// payloads are JSON encoded from the decoded values, copies already.
func (l *loader) own(s *Schedule) {
	s.Name = strings.Clone(s.Name)
	s.Cron = l.intern(s.Cron)
	s.Task = l.intern(s.Task)
	s.After = l.intern(s.After)
	s.Require = l.intern(s.Require)
	for i, n := range s.Notify {
		s.Notify[i] = l.intern(n)
	}
	s.Overlap = Overlap(l.intern(string(s.Overlap)))
	for _, it := range s.items {
		for i, k := range it.keys {
			it.keys[i] = l.intern(k)
		}
	}
}

// intern returns the load's one copy of text.
func (l *loader) intern(text string) string {
	if c, ok := l.strs[text]; ok {
		return c
	}
	c := strings.Clone(text)
	l.strs[c] = c
	return c
}
