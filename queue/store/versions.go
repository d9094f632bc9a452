package store

import (
	"slices"
	"sort"
)

// Versions maps job types to the payload versions (NewJob.Version) a pool
// runs; a type it lacks runs at version 1 only. A job of another version
// stays pending, like an unhandled type's, for a pool that accepts it.
type Versions map[string][]int

// Accepts reports whether a pool with vs, running typ, runs its jobs of
// version.
func (vs Versions) Accepts(typ string, version int) bool {
	if accepted, ok := vs[typ]; ok {
		return slices.Contains(accepted, version)
	}
	return version == 1
}

// Of returns the versions of typ accepted: [1] when vs lacks it.
func (vs Versions) Of(typ string) []int {
	if accepted, ok := vs[typ]; ok {
		return accepted
	}
	return []int{1}
}

// TypeVersion is a job type at one payload version.
type TypeVersion struct {
	Type    string
	Version int
}

// Split divides types into those taken at version 1 (plain) and the sorted
// (type, version) pairs of other versions. Without versions, plain is types:
// a claim by type alone.
func (vs Versions) Split(types []string) (plain []string, pairs []TypeVersion) {
	if len(vs) == 0 {
		return types, nil
	}
	plain = make([]string, 0, len(types))
	for _, t := range types {
		for _, v := range vs.Of(t) {
			if v == 1 {
				plain = append(plain, t)
			} else {
				pairs = append(pairs, TypeVersion{t, v})
			}
		}
	}
	sort.Slice(pairs, func(i, k int) bool {
		if pairs[i].Type != pairs[k].Type {
			return pairs[i].Type < pairs[k].Type
		}
		return pairs[i].Version < pairs[k].Version
	})
	return plain, pairs
}

// PoolTypes is what one running pool takes, per its row (see Presence).
type PoolTypes struct {
	Types    []string
	Versions Versions
}

// Accepted returns the union of what pools take, versions sorted.
func Accepted(pools []PoolTypes) map[string][]int {
	out := map[string][]int{}
	for _, p := range pools {
		for _, t := range p.Types {
			for _, v := range p.Versions.Of(t) {
				if !slices.Contains(out[t], v) {
					out[t] = append(out[t], v)
				}
			}
		}
	}
	for _, vs := range out {
		slices.Sort(vs)
	}
	return out
}

// MergeWaiting turns ready jobs no running pool takes, counted by type and
// version, into Unhandled.Waiting: a type no pool runs is one entry of
// Version 0, versions summed; a type some pool runs has an entry per waiting
// version, with the versions accepted.
func MergeWaiting(byVersion []Waiting, accepted map[string][]int) []Waiting {
	var out []Waiting
	for _, w := range byVersion {
		vs, runs := accepted[w.Type]
		if runs {
			w.Accepted = vs
			out = append(out, w)
			continue
		}
		w.Version = 0
		if n := len(out); n > 0 && out[n-1].Type == w.Type && out[n-1].Version == 0 {
			out[n-1].Ready += w.Ready
			out[n-1].Oldest = max(out[n-1].Oldest, w.Oldest)
			continue
		}
		out = append(out, w)
	}
	return out
}
