package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/schedule/config"
	"github.com/scheduler-run/scheduler/tasks"
)

// workerPools are the daemon's worker pools: the default one, of
// [scheduler] workers, which also runs the periodic maintenance, and one
// per [pools.NAME] table, each with its own workers and claiming only the
// jobs of its tasks, so that a backlog of one task's long jobs cannot hold
// the workers the others need. The layout is the config's at start: a
// reload that changes [pools] waits for a restart (see reload).
type workerPools struct {
	names  []string               // config.DefaultPool first, then the tables' names
	pools  map[string]*queue.Pool // by name
	sizes  map[string]int         // workers, by name
	poolOf map[string]string      // task -> the table that names it, at start
}

// newWorkerPools makes the pools of cfg on q: pc configures the default
// pool; the others take it with their own workers, an owner of
// "OWNER/NAME" (their workers are "OWNER/NAME/wN" in the attempts) and no
// periodic maintenance, which one pool of the process does for all. Their
// log lines carry pool=NAME.
func newWorkerPools(q *queue.Client, pc queue.PoolConfig, cfg *config.Config) (*workerPools, error) {
	def, err := queue.NewPool(q, pc)
	if err != nil {
		return nil, err
	}
	wp := &workerPools{names: []string{config.DefaultPool}, pools: map[string]*queue.Pool{config.DefaultPool: def},
		sizes: map[string]int{config.DefaultPool: def.Workers()}, poolOf: map[string]string{}}
	for _, p := range cfg.Pools {
		c := pc
		c.Workers, c.Owner, c.MaintenanceEvery = p.Workers, def.Owner()+"/"+p.Name, -1
		c.Logger = pc.Logger.With("pool", p.Name)
		pool, err := queue.NewPool(q, c)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		wp.names = append(wp.names, p.Name)
		wp.pools[p.Name], wp.sizes[p.Name] = pool, p.Workers
		for _, t := range p.Tasks {
			wp.poolOf[t] = p.Name
		}
	}
	return wp, nil
}

// of returns the name of the pool that runs task's jobs: the one whose
// table named it at start, else the default pool (a task a reload added).
func (wp *workerPools) of(task string) string {
	if name, ok := wp.poolOf[task]; ok {
		return name
	}
	return config.DefaultPool
}

// defaultPool is the pool of the tasks of no [pools.NAME] table.
func (wp *workerPools) defaultPool() *queue.Pool { return wp.pools[config.DefaultPool] }

// workers is how many jobs the pools run at once, together.
func (wp *workerPools) workers() int {
	n := 0
	for _, s := range wp.sizes {
		n += s
	}
	return n
}

// component names a pool's loop for the liveness probes and the errors
// of a failed component: "pool" for the default one, "pool NAME" for
// the others.
func (wp *workerPools) component(name string) string {
	if name == config.DefaultPool {
		return "pool"
	}
	return "pool " + name
}

// probes adds each pool's liveness probe to m, under its component name.
func (wp *workerPools) probes(m map[string]func() <-chan struct{}) map[string]func() <-chan struct{} {
	for _, name := range wp.names {
		m[wp.component(name)] = wp.pools[name].Probe
	}
	return m
}

// announce writes every pool's row (see queue.Pool.Announce), each even
// when another's failed.
func (wp *workerPools) announce(ctx context.Context) error {
	var errs []error
	for _, name := range wp.names {
		errs = append(errs, wp.pools[name].Announce(ctx))
	}
	return errors.Join(errs...)
}

// setStopTimeout bounds each pool's coming stop (see
// queue.Pool.SetStopTimeout).
func (wp *workerPools) setStopTimeout(d time.Duration) {
	for _, name := range wp.names {
		wp.pools[name].SetStopTimeout(d)
	}
}

// setProcess makes every pool's row say pr of the daemon (see
// queue.Pool.SetProcess).
func (wp *workerPools) setProcess(pr queue.Process) {
	for _, name := range wp.names {
		wp.pools[name].SetProcess(pr)
	}
}

// cut ends every pool's shutdown grace at once (see queue.Pool.Cut).
func (wp *workerPools) cut() {
	for _, name := range wp.names {
		wp.pools[name].EndGrace()
	}
}

// register gives each pool a handler for every task of cfg that it runs.
// Tasks that a reload removed keep their handlers until restart, so jobs of
// theirs already queued still run.
func (wp *workerPools) register(reg *tasks.Registry, cfg *config.Config) error {
	zones := scheduleZones(cfg)
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		spec := taskSpec(t)
		spec.Zones = zones
		h, err := reg.Handler(name, spec)
		if err != nil {
			return fmt.Errorf("task %s: %w", name, err)
		}
		if err := wp.pools[wp.of(name)].Register(name, h, t.TypeConfig()); err != nil {
			return err
		}
	}
	return nil
}

// gauges are what the metrics read of the pools.
func (wp *workerPools) gauges() []poolGauge {
	var out []poolGauge
	for _, name := range wp.names {
		out = append(out, poolGauge{name: name, workers: wp.sizes[name], busy: wp.pools[name].Busy})
	}
	return out
}

// poolAttrs are the log attributes that describe the pools: their names
// and workers, such as "default=8 exports=1".
func (wp *workerPools) poolAttrs() string {
	s := ""
	for i, name := range wp.names {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%s=%d", name, wp.sizes[name])
	}
	return s
}
