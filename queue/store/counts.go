package store

import (
	"cmp"
	"slices"
)

// CountKey names one job count: the jobs of a type in a state.
type CountKey struct {
	Type  string
	State State
}

// CountDeltas are a transaction's changes to the job counts an engine keeps
// so Stats reads a few rows, not every job; written once, before the commit.
type CountDeltas map[CountKey]int64

// Move records n jobs of typ moving from state from to state to.
func (d CountDeltas) Move(typ string, from, to State, n int64) {
	if n == 0 || from == to {
		return
	}
	d[CountKey{typ, from}] -= n
	d[CountKey{typ, to}] += n
}

// Add records n jobs of typ entering state (n < 0: leaving it).
func (d CountDeltas) Add(typ string, state State, n int64) {
	if n != 0 {
		d[CountKey{typ, state}] += n
	}
}

// CountDelta is one change of a count.
type CountDelta struct {
	CountKey
	N int64
}

// Sorted returns the non-zero changes by type, then state: the order engines
// lock counts in, so no two transactions wait in a cycle.
func (d CountDeltas) Sorted() []CountDelta {
	out := make([]CountDelta, 0, len(d))
	for k, n := range d {
		if n != 0 {
			out = append(out, CountDelta{k, n})
		}
	}
	slices.SortFunc(out, func(a, b CountDelta) int {
		return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.State, b.State))
	})
	return out
}

// Changed reports whether d changes a count.
func (d CountDeltas) Changed() bool {
	for _, n := range d {
		if n != 0 {
			return true
		}
	}
	return false
}
