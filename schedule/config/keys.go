package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// checkKeys reports unknown keys: those MetaData.Undecoded lists outside
// free-form values, and those that differ from a known key only in case.
func (l *loader) checkKeys() {
	undecoded := map[string]bool{}
	for _, k := range l.md.Undecoded() {
		undecoded[k.String()] = true
	}
	seen := map[string]bool{}
	idx := l.first - 1
	for _, k := range l.md.Keys() {
		if len(k) == 1 && k[0] == "schedule" {
			idx++
		}
		if known, inside := knownField(k); inside || known && (len(undecoded) == 0 || !undecoded[k.String()]) {
			continue // what keyPlace would find known, without placing it
		}
		p := l.keyPlace(k, idx)
		if p.inside || (p.known && !undecoded[k.String()]) || l.underFailed(p.at.path) {
			continue
		}
		if pk := pathKey(p.at.path[:p.depth]); !seen[pk] {
			seen[pk] = true
			key := p.at.path[p.depth-1]
			if lower := strings.ToLower(key); lower != key && l.knownIn(k[:min(len(k), p.depth)], lower) {
				l.errorf(p.at, "unknown key %q (keys are case-sensitive: %q)", key, lower)
			} else {
				l.errorf(p.at, "unknown key %q%s", key, keyHint(key, l.keysOf(k[:min(len(k), p.depth)])))
			}
		}
	}
}

// findTwins notes keys whose table also holds them spelt in another case
// (cron and Cron). The decoder would take either, by map order; neither
// is decoded, and checkKeys reports the misspelling, so every load lists
// the same problems.
func (l *loader) findTwins() {
	l.twins = map[string]bool{}
	if !anyCased(l.md.Keys()) {
		return // two spellings need a letter that lowercases
	}
	spellings := map[string]map[string]bool{}
	idx := l.first - 1
	for _, k := range l.md.Keys() {
		if len(k) == 1 && k[0] == "schedule" {
			idx++
		}
		// The key's top-level table and its field; Keys lists implied
		// tables (tasks in [tasks.x]) only through longer keys.
		for n := range min(len(k), 3) {
			p := l.keyPlace(k[:n+1], idx)
			if p.inside || len(p.at.path) != p.depth {
				continue
			}
			last := p.at.path[p.depth-1]
			canonical := pathKey(append(slices.Clone(p.at.path[:p.depth-1]), strings.ToLower(last)))
			if spellings[canonical] == nil {
				spellings[canonical] = map[string]bool{}
			}
			spellings[canonical][last] = true
		}
	}
	for canonical, s := range spellings {
		if len(s) > 1 {
			l.twins[canonical] = true
		}
	}
}

// anyCased reports whether a table or field name of keys, their first
// three parts, could change in strings.ToLower.
func anyCased(keys []toml.Key) bool {
	for _, k := range keys {
		for _, part := range k[:min(len(k), 3)] {
			for i := range len(part) {
				if c := part[i]; c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf {
					return true
				}
			}
		}
	}
	return false
}

// keyHint suggests the keys of a table nearest to an unknown key.
func keyHint(key string, known map[string]bool) string {
	return suggest.Hint(key, slices.Collect(maps.Keys(known)))
}

func (l *loader) knownIn(k toml.Key, name string) bool {
	return l.keysOf(k)[name]
}

func (l *loader) keysOf(k toml.Key) map[string]bool {
	switch {
	case k[0] == "scheduler" && len(k) >= 2:
		return schedulerKeys
	case k[0] == "tasks" && len(k) >= 3:
		return taskKeys
	case k[0] == "schedule" && len(k) >= 2:
		return scheduleKeys
	case k[0] == "http" && len(k) >= 2:
		return httpKeys
	case k[0] == "api" && len(k) >= 2:
		return apiKeys
	case k[0] == "tracing" && len(k) >= 2:
		return tracingKeys
	case k[0] == "pools" && len(k) >= 3:
		return poolKeys
	case len(k) == 1:
		return fileKeys
	}
	return nil
}

// knownField reports what keyPlace would of k's known and inside, for the
// fields of the tables that hold many keys; false for any other key.
func knownField(k toml.Key) (known, inside bool) {
	var n int
	var keys map[string]bool
	switch {
	case k[0] == "schedule" && len(k) >= 2:
		n, keys = 1, scheduleKeys
	case k[0] == "tasks" && len(k) >= 3:
		n, keys = 2, taskKeys
	default:
		return false, false
	}
	known = keys[k[n]]
	return known, known && len(k) > n+1
}

// keyPlace is where a key of the file belongs.
type keyPlace struct {
	at     where // the table and the key's path
	depth  int   // path length up to the unknown key, if any
	known  bool  // its table may hold the key
	inside bool  // the key lies inside a known key's value
}

// keyPlace places key k; idx is the current [[schedule]]'s position.
// Inside payload, for_each, env and headers any key goes; inside other
// values a table is the key's type error.
func (l *loader) keyPlace(k toml.Key, idx int) keyPlace {
	switch {
	case k[0] == "scheduler" && len(k) >= 2:
		return keyPlace{
			at:     where{table: "scheduler", path: []string{"scheduler", k[1]}},
			depth:  2,
			known:  schedulerKeys[k[1]],
			inside: len(k) > 2 && schedulerKeys[k[1]],
		}
	case k[0] == "tasks" && len(k) >= 3:
		return keyPlace{
			at:     where{table: "task", job: k[1], path: []string{"tasks", k[1], k[2]}},
			depth:  3,
			known:  taskKeys[k[2]],
			inside: len(k) > 3 && taskKeys[k[2]],
		}
	case k[0] == "schedule" && len(k) >= 2:
		job := l.names[idx]
		if job == "" {
			job = fmt.Sprintf("#%d", idx+1)
		}
		return keyPlace{
			at:     where{table: "schedule", job: job, path: []string{"schedule", elem(idx), k[1]}},
			depth:  3,
			known:  scheduleKeys[k[1]],
			inside: len(k) > 2 && scheduleKeys[k[1]],
		}
	case k[0] == "http" && len(k) >= 2:
		return keyPlace{
			at:     where{table: "http", path: []string{"http", k[1]}},
			depth:  2,
			known:  httpKeys[k[1]],
			inside: len(k) > 2 && httpKeys[k[1]],
		}
	case k[0] == "api" && len(k) >= 2:
		return keyPlace{
			at:     where{table: "api", path: []string{"api", k[1]}},
			depth:  2,
			known:  apiKeys[k[1]],
			inside: len(k) > 2 && apiKeys[k[1]],
		}
	case k[0] == "tracing" && len(k) >= 2:
		return keyPlace{
			at:     where{table: "tracing", path: []string{"tracing", k[1]}},
			depth:  2,
			known:  tracingKeys[k[1]],
			inside: len(k) > 2 && tracingKeys[k[1]],
		}
	case k[0] == "pools" && len(k) >= 3:
		return keyPlace{
			at:     where{table: "pool", job: k[1], path: []string{"pools", k[1], k[2]}},
			depth:  3,
			known:  poolKeys[k[2]],
			inside: len(k) > 3 && poolKeys[k[2]],
		}
	case k[0] == "tasks", k[0] == "pools":
		return keyPlace{at: where{path: k}, depth: 1, known: true}
	}
	return keyPlace{at: where{path: k}, depth: 1, known: len(k) == 1 && fileKeys[k[0]]}
}

// underFailed reports whether path is inside a value that failed whole.
func (l *loader) underFailed(path []string) bool {
	for n := len(path); n > 0; n-- {
		if l.failed[pathKey(path[:n])] {
			return true
		}
	}
	return false
}
