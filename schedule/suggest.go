package schedule

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// zoneNames lists the IANA zones built into the binary (time/tzdata), one
// per line: the names in $GOROOT/lib/time/zoneinfo.zip, which
// TestZoneNamesMatchTheEmbeddedDatabase keeps in step.
//
//go:embed zones.txt
var zoneNames string

var zoneList = sync.OnceValue(func() []string { return strings.Fields(zoneNames) })

// maxSuggestions bounds the names a hint offers when several are as close.
const maxSuggestions = 3

// suggest returns the names of known nearest to name, when they are close
// enough to be what was meant: an edit distance (case ignored, a swap of
// two neighbours counting once) of at most typos(name). It returns nothing
// for a name far from all of them, and at most maxSuggestions names,
// sorted.
func suggest(name string, known []string) []string {
	return suggestWithin(name, known, typos(name))
}

// typos is how many edits a misspelling of s may hold: a quarter of its
// length, at least 1 and at most 3.
func typos(s string) int { return min(max(len([]rune(s))/4, 1), 3) }

func suggestWithin(name string, known []string, limit int) []string {
	best, out := limit, []string(nil)
	lower := strings.ToLower(name)
	for _, k := range known {
		d := editDistance(lower, strings.ToLower(k))
		if d > best {
			continue
		}
		if d < best {
			best, out = d, out[:0]
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out[:min(len(out), maxSuggestions)]
}

// didYouMean formats suggestions as a hint to append to a message:
// ` (did you mean "a"?)`, or "" for none.
func didYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return " (did you mean " + strings.Join(quoted, " or ") + "?)"
}

// zoneHint suggests the built-in zones nearest to a name that is not one.
// The edits allowed are those of its last element, the city, since zones
// share their regions; a bare city ("istanbul") is also compared with each
// zone's last element.
func zoneHint(name string) string {
	if name == "" {
		return ""
	}
	city := name[strings.LastIndexByte(name, '/')+1:]
	if s := suggestWithin(name, zoneList(), typos(city)); len(s) > 0 || city != name {
		return didYouMean(s)
	}
	var cities []string
	byCity := map[string][]string{}
	for _, z := range zoneList() {
		city := z[strings.LastIndexByte(z, '/')+1:]
		if byCity[city] == nil {
			cities = append(cities, city)
		}
		byCity[city] = append(byCity[city], z)
	}
	var zones []string
	for _, c := range suggest(name, cities) {
		zones = append(zones, byCity[c]...)
	}
	slices.Sort(zones)
	return didYouMean(zones[:min(len(zones), maxSuggestions)])
}

// keyHint suggests the keys of a table nearest to an unknown key.
func keyHint(key string, known map[string]bool) string {
	names := make([]string, 0, len(known))
	for k := range known {
		names = append(names, k)
	}
	return didYouMean(suggest(key, names))
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours, each 1.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// Three rows of the matrix: two back, one back, and the current one.
	prev2, prev, cur := make([]int, len(t)+1), make([]int, len(t)+1), make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
