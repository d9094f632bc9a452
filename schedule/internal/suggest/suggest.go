// Package suggest finds the known names nearest to a misspelt one, for
// "did you mean" hints. It knows nothing of what the names stand for.
package suggest

import (
	"fmt"
	"slices"
	"strings"
)

// maxNames bounds the names a hint offers when several are as close.
const maxNames = 3

// Names returns at most three names of known nearest to name, sorted,
// within Typos(name) edits (case ignored, a swap of neighbours one edit).
func Names(name string, known []string) []string {
	return Within(name, known, Typos(name))
}

// Typos is how many edits a misspelling of s may hold: a quarter of its
// length, from 1 to 3.
func Typos(s string) int { return min(max(len([]rune(s))/4, 1), 3) }

// Within is Names with the edits allowed given as limit.
func Within(name string, known []string, limit int) []string {
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
	return out[:min(len(out), maxNames)]
}

// DidYouMean formats names as a hint to append to a message:
// ` (did you mean "a"?)`, or "" for none.
func DidYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return " (did you mean " + strings.Join(quoted, " or ") + "?)"
}

// Hint is DidYouMean(Names(name, known)).
func Hint(name string, known []string) string { return DidYouMean(Names(name, known)) }

// editDistance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours cost 1 each.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
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
