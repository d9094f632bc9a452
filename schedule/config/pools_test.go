package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestLoadPools: each [pools.NAME] table is loaded, sorted by name, and
// PoolOf names the pool of each task, DefaultPool for the tasks of none.
func TestLoadPools(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `
[scheduler]
workers = 4
[tasks.export]
[tasks.import]
[tasks.cleanup]
[pools.exports]
workers = 1
tasks = ["export", "import"]
[pools.bulk]
workers = 3
tasks = ["cleanup"]
`)
	var names []string
	for _, p := range cfg.Pools {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"bulk", "exports"}) {
		t.Fatalf("pools = %q, want bulk, exports", names)
	}
	if p := cfg.Pools[1]; p.Workers != 1 || !slices.Equal(p.Tasks, []string{"export", "import"}) {
		t.Errorf("exports = %+v, want 1 worker for export, import", p)
	}
	for task, want := range map[string]string{"export": "exports", "import": "exports", "cleanup": "bulk", "none": DefaultPool} {
		if got := cfg.PoolOf(task); got != want {
			t.Errorf("PoolOf(%q) = %q, want %q", task, got, want)
		}
	}
	if cfg := mustParse(t, "[tasks.t]\n"); len(cfg.Pools) != 0 || cfg.PoolOf("t") != DefaultPool {
		t.Errorf("no [pools]: pools %v, PoolOf(t) = %q", cfg.Pools, cfg.PoolOf("t"))
	}
}

// TestLoadPoolErrors: every mistake of a [pools.NAME] table is reported at
// its line, naming the pool and the key.
func TestLoadPoolErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		toml  string
		line  int
		job   string
		field string
		want  string
	}{
		{"task in two pools", `[tasks.export]
[pools.a]
workers = 1
tasks = ["export"]
[pools.b]
workers = 1
tasks = ["export"]
`, 7, "b", "tasks", `task "export" is already in pool "a" (line 4): a task runs in one pool`},
		{"unknown task", `[tasks.export]
[pools.a]
workers = 1
tasks = ["exprot"]
`, 4, "a", "tasks", `task "exprot" is not defined (did you mean "export"?)`},
		{"unknown task far from any", `[tasks.export]
[pools.a]
workers = 1
tasks = ["zzzzzzzz"]
`, 4, "a", "tasks", `task "zzzzzzzz" is not defined: add a [tasks.zzzzzzzz] table`},
		{"task twice in one pool", `[tasks.export]
[pools.a]
workers = 1
tasks = ["export", "export"]
`, 4, "a", "tasks", `task "export" is named twice`},
		{"no workers", `[tasks.export]
[pools.a]
workers = 0
tasks = ["export"]
`, 3, "a", "workers", `0 workers: want 1 to 10000`},
		{"negative workers", `[tasks.export]
[pools.a]
workers = -2
tasks = ["export"]
`, 3, "a", "workers", `-2 workers: want 1 to 10000`},
		{"workers missing", `[tasks.export]
[pools.a]
tasks = ["export"]
`, 2, "a", "workers", `missing: want 1 to 10000`},
		{"workers not a number", `[tasks.export]
[pools.a]
workers = "2"
tasks = ["export"]
`, 3, "a", "workers", `wrong type: want an integer, got a string`},
		{"empty tasks", `[tasks.export]
[pools.a]
workers = 1
tasks = []
`, 4, "a", "tasks", `empty: name the tasks whose jobs this pool runs, or remove the table`},
		{"tasks missing", `[tasks.export]
[pools.a]
workers = 1
`, 2, "a", "tasks", `missing: name the tasks whose jobs this pool runs`},
		{"bad name", `[tasks.export]
[pools."a b"]
workers = 1
tasks = ["export"]
`, 2, "a b", "", `pool name "a b": use 1 to 128 letters, digits and -_.:@/`},
		{"default name", `[tasks.export]
[pools.default]
workers = 1
tasks = ["export"]
`, 2, "default", "", `pool name "default" names the pool of the tasks in no [pools.NAME] table, sized by [scheduler] workers: pick another name`},
		{"unknown key", `[tasks.export]
[pools.a]
workers = 1
tasks = ["export"]
worker = 2
`, 5, "a", "", `unknown key "worker" (did you mean "workers"?)`},
		{"not a table", `pools = 3
`, 1, "", "pools", `wrong type: want a table, got an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("schedules.toml", []byte(tt.toml))
			var es Errors
			if !errors.As(err, &es) || len(es) != 1 {
				t.Fatalf("Parse = %v, want one problem", err)
			}
			e := es[0]
			if e.Line != tt.line || e.Job != tt.job || e.Field != tt.field || e.Err.Error() != tt.want {
				t.Errorf("problem = line %d, pool %q, field %q: %v; want line %d, pool %q, field %q: %s",
					e.Line, e.Job, e.Field, e.Err, tt.line, tt.job, tt.field, tt.want)
			}
			if tt.job != "" && !strings.Contains(e.Error(), `pool "`+tt.job+`"`) {
				t.Errorf("%q does not name the pool", e.Error())
			}
		})
	}
}

// TestComparePools: a reload's Diff names the pools added, removed or
// changed.
func TestComparePools(t *testing.T) {
	t.Parallel()
	base := "[tasks.a]\n[tasks.b]\n"
	old := mustParse(t, base+"[pools.p]\nworkers = 1\ntasks = [\"a\"]\n[pools.q]\nworkers = 1\ntasks = [\"b\"]\n")
	for _, tt := range []struct {
		name string
		new  string
		want []string
	}{
		{"same", "[pools.p]\nworkers = 1\ntasks = [\"a\"]\n[pools.q]\nworkers = 1\ntasks = [\"b\"]\n", nil},
		{"workers", "[pools.p]\nworkers = 2\ntasks = [\"a\"]\n[pools.q]\nworkers = 1\ntasks = [\"b\"]\n", []string{"p"}},
		{"tasks moved", "[pools.p]\nworkers = 1\ntasks = [\"a\", \"b\"]\n", []string{"p", "q"}},
		{"none", "", []string{"p", "q"}},
	} {
		d := Compare(old, mustParse(t, base+tt.new))
		if !slices.Equal(d.Pools, tt.want) || d.Empty() != (tt.want == nil) {
			t.Errorf("%s: Pools = %q (empty %v), want %q", tt.name, d.Pools, d.Empty(), tt.want)
		}
	}
}
