package config

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Diff is what a reload changes. Every list is sorted.
type Diff struct {
	Added   []string            // schedules only in new
	Changed []string            // schedules with any key different
	Removed []string            // schedules only in old
	Fields  map[string][]string // each changed schedule's keys that differ

	TasksAdded   []string
	TasksChanged []string
	TasksRemoved []string
	TaskFields   map[string][]string // each changed task's keys that differ

	// Scheduler lists the [scheduler] keys that differ.
	Scheduler []string
	// Pools lists the [pools.NAME] tables added, removed or changed.
	Pools []string
}

// Empty reports whether d changes nothing.
func (d Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Changed) == 0 && len(d.Removed) == 0 &&
		len(d.TasksAdded) == 0 && len(d.TasksChanged) == 0 && len(d.TasksRemoved) == 0 && len(d.Scheduler) == 0 && len(d.Pools) == 0
}

// Compare returns what differs between old and new. Either may be nil,
// meaning an empty configuration.
func Compare(old, new *Config) Diff {
	d := Diff{Fields: map[string][]string{}, TaskFields: map[string][]string{}}
	for _, s := range schedules(new) {
		o, ok := lookup(old, s.Name)
		if !ok {
			d.Added = append(d.Added, s.Name)
		} else if f := changedKeys(o, s, scheduleKey); len(f) > 0 {
			d.Changed = append(d.Changed, s.Name)
			d.Fields[s.Name] = f
		}
	}
	for _, o := range schedules(old) {
		if _, ok := lookup(new, o.Name); !ok {
			d.Removed = append(d.Removed, o.Name)
		}
	}
	oldTasks, newTasks := tasks(old), tasks(new)
	for _, name := range slices.Sorted(maps.Keys(newTasks)) {
		o, ok := oldTasks[name]
		if !ok {
			d.TasksAdded = append(d.TasksAdded, name)
		} else if f := changedKeys(o, newTasks[name], fieldKey); len(f) > 0 {
			d.TasksChanged = append(d.TasksChanged, name)
			d.TaskFields[name] = f
		}
	}
	for _, name := range slices.Sorted(maps.Keys(oldTasks)) {
		if _, ok := newTasks[name]; !ok {
			d.TasksRemoved = append(d.TasksRemoved, name)
		}
	}
	if old != nil && new != nil {
		d.Scheduler = changedKeys(&old.Scheduler, &new.Scheduler, fieldKey)
	}
	d.Pools = changedPools(pools(old), pools(new))
	slices.Sort(d.Added)
	slices.Sort(d.Changed)
	slices.Sort(d.Removed)
	return d
}

func schedules(c *Config) []*Schedule {
	if c == nil {
		return nil
	}
	return c.Schedules
}

func pools(c *Config) []*Pool {
	if c == nil {
		return nil
	}
	return c.Pools
}

func tasks(c *Config) map[string]*Task {
	if c == nil {
		return nil
	}
	return c.Tasks
}

func lookup(c *Config, name string) (*Schedule, bool) {
	if c == nil {
		return nil, false
	}
	return c.Schedule(name)
}

// changedKeys returns the file keys of the exported fields that differ
// between *a and *b, sorted. Going by reflection, a new key needs no
// listing here. Zones compare by name, payloads by their JSON.
func changedKeys[T any](a, b *T, key func(reflect.StructField) string) []string {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var out []string
	for i := range va.NumField() {
		f := va.Type().Field(i)
		if !f.IsExported() || f.Name == "Name" {
			continue
		}
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		if lx, ok := x.(*time.Location); ok {
			x, y = lx.String(), y.(*time.Location).String()
		}
		if !reflect.DeepEqual(x, y) && !sameJSON(x, y) {
			out = append(out, key(f))
		}
	}
	slices.Sort(out)
	return out
}

// sameJSON reports whether x and y encode alike: payloads compare as jobs
// see them, whatever Go values (a zone pointer) they hold.
func sameJSON(x, y any) bool {
	a, err := json.Marshal(x)
	if err != nil {
		return false
	}
	b, err := json.Marshal(y)
	return err == nil && bytes.Equal(a, b)
}

// scheduleKey is the file key of a Schedule field; Location's is
// timezone.
func scheduleKey(f reflect.StructField) string {
	if f.Name == "Location" {
		return "timezone"
	}
	return fieldKey(f)
}

// fieldKey is a field's name in snake case, initialisms whole
// (MaxAttempts is max_attempts, URL is url).
func fieldKey(f reflect.StructField) string {
	r := []rune(f.Name)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
