package config

import "strings"

// The decoder's strings are parts of its copy of the document, so a
// schedule holding one would keep the whole copy alive. own copies them,
// once for the strings many schedules repeat.

// own gives s copies of its strings: names, cron text, payload and items.
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
	if s.Payload != nil {
		s.Payload = l.ownMap(s.Payload)
	}
	for i, e := range s.ForEach {
		s.ForEach[i] = l.ownMap(e)
	}
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

// ownMap returns a copy of a decoded table, its keys interned.
func (l *loader) ownMap(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[l.intern(k)] = l.ownValue(v)
	}
	return c
}

func (l *loader) ownValue(v any) any {
	switch v := v.(type) {
	case string:
		return strings.Clone(v)
	case map[string]any:
		return l.ownMap(v)
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = l.ownValue(e)
		}
		return c
	case []map[string]any:
		c := make([]map[string]any, len(v))
		for i, e := range v {
			c[i] = l.ownMap(e)
		}
		return c
	}
	return v
}
