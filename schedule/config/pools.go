package config

import (
	"fmt"
	"maps"
	"slices"

	"github.com/BurntSushi/toml"
)

// DefaultPool names the pool, of [scheduler] workers, that runs the tasks
// no [pools.NAME] names; no table may take the name.
const DefaultPool = "default"

// Pool is a [pools.NAME] table: workers of their own for some tasks, so
// that one task's backlog cannot hold the workers another needs.
type Pool struct {
	// Name is the table's NAME, not DefaultPool.
	Name string
	// Workers is how many jobs run at once (key workers, 1 to MaxWorkers).
	Workers int
	// Tasks names the pool's tasks (key tasks, required), in file order.
	// A task is in one pool at most.
	Tasks []string
}

type rawPool struct {
	Workers toml.Primitive `toml:"workers"`
	Tasks   toml.Primitive `toml:"tasks"`
}

var poolKeys = tomlKeys(rawPool{})

// PoolOf returns the name of task's pool.
func (c *Config) PoolOf(task string) string {
	if p, ok := c.poolOf[task]; ok {
		return p
	}
	return DefaultPool
}

// loadPools decodes [pools.NAME] into cfg.Pools, by name, after loadTasks.
func (l *loader) loadPools(p toml.Primitive, cfg *Config) {
	cfg.poolOf = map[string]string{}
	var raws map[string]toml.Primitive
	if !l.decode(p, &raws, where{field: "pools", path: []string{"pools"}}) {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(raws)) {
		w := where{table: "pool", job: name, path: []string{"pools", name}}
		switch {
		case !validName(name):
			l.errorf(w, "pool name %q: %s", name, nameRule)
		case name == DefaultPool:
			l.errorf(w, "pool name %q names the pool of the tasks in no [pools.NAME] table, sized by [scheduler] workers: pick another name", name)
		}
		var raw rawPool
		if !l.decode(raws[name], &raw, w) {
			continue
		}
		pool := &Pool{Name: name}
		ww := w.with("workers")
		switch {
		case !present(raw.Workers):
			l.errorf(ww, "missing: want 1 to %d", MaxWorkers)
		case l.decode(raw.Workers, &pool.Workers, ww) && (pool.Workers < 1 || pool.Workers > MaxWorkers):
			l.errorf(ww, "%d workers: want 1 to %d", pool.Workers, MaxWorkers)
		}
		tw := w.with("tasks")
		switch {
		case !present(raw.Tasks):
			l.errorf(tw, "missing: name the tasks whose jobs this pool runs")
		case l.decode(raw.Tasks, &pool.Tasks, tw) && len(pool.Tasks) == 0:
			l.errorf(tw, "empty: name the tasks whose jobs this pool runs, or remove the table")
		}
		l.assignTasks(pool, cfg, tw)
		cfg.Pools = append(cfg.Pools, pool)
	}
}

// assignTasks puts pool's tasks in it, reporting at tw a task named
// twice, undefined, or in another pool.
func (l *loader) assignTasks(pool *Pool, cfg *Config, tw where) {
	seen := map[string]bool{}
	for _, task := range pool.Tasks {
		switch {
		case seen[task]:
			l.errorf(tw, "task %q is named twice", task)
		case cfg.Tasks[task] == nil:
			l.undefinedTask(tw, task, cfg)
		case cfg.poolOf[task] != "":
			other := cfg.poolOf[task]
			at := ""
			if line := l.line("pools", other, "tasks"); line > 0 {
				at = fmt.Sprintf(" (line %d)", line)
			}
			l.errorf(tw, "task %q is already in pool %q%s: a task runs in one pool", task, other, at)
		default:
			cfg.poolOf[task] = pool.Name
		}
		seen[task] = true
	}
}

func samePools(a, b []*Pool) bool {
	return slices.EqualFunc(a, b, func(x, y *Pool) bool {
		return x.Name == y.Name && x.Workers == y.Workers && slices.Equal(x.Tasks, y.Tasks)
	})
}

// changedPools returns the pools added, removed or changed, sorted.
func changedPools(old, new []*Pool) []string {
	byName := func(ps []*Pool) map[string]*Pool {
		m := map[string]*Pool{}
		for _, p := range ps {
			m[p.Name] = p
		}
		return m
	}
	o, n := byName(old), byName(new)
	var out []string
	for name, p := range n {
		if q, ok := o[name]; !ok || !samePools([]*Pool{p}, []*Pool{q}) {
			out = append(out, name)
		}
	}
	for name := range o {
		if _, ok := n[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
