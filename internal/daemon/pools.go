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

// workerPools are the default pool, which also runs maintenance, and one
// per [pools.NAME] table, claiming only its tasks' jobs, so that one
// task's backlog cannot hold the workers others need. The layout is fixed
// at start; a reload that changes [pools] waits for a restart.
type workerPools struct {
	names  []string               // config.DefaultPool first, then the tables' names
	pools  map[string]*queue.Pool // by name
	sizes  map[string]int         // workers, by name
	poolOf map[string]string      // task -> the table that names it, at start
}

// newWorkerPools makes cfg's pools. pc configures the default one; the
// others copy it with their own workers, owner "OWNER/NAME", pool=NAME in
// their logs, and no maintenance, which the default pool does for all.
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

// of returns the pool that runs task: its table's at start, else the
// default (a task a reload added).
func (wp *workerPools) of(task string) string {
	if name, ok := wp.poolOf[task]; ok {
		return name
	}
	return config.DefaultPool
}

// defaultPool is the pool of the tasks of no [pools.NAME] table.
func (wp *workerPools) defaultPool() *queue.Pool { return wp.pools[config.DefaultPool] }

// workers is how many jobs the pools run at once.
func (wp *workerPools) workers() int {
	n := 0
	for _, s := range wp.sizes {
		n += s
	}
	return n
}

// component names a pool's loop in probes and errors: "pool [NAME]".
func (wp *workerPools) component(name string) string {
	if name == config.DefaultPool {
		return "pool"
	}
	return "pool " + name
}

// probes adds each pool's liveness probe to m.
func (wp *workerPools) probes(m map[string]func() <-chan struct{}) map[string]func() <-chan struct{} {
	for _, name := range wp.names {
		m[wp.component(name)] = wp.pools[name].Probe
	}
	return m
}

// announce writes every pool's row, each even when another's failed.
func (wp *workerPools) announce(ctx context.Context) error {
	var errs []error
	for _, name := range wp.names {
		errs = append(errs, wp.pools[name].Announce(ctx))
	}
	return errors.Join(errs...)
}

// setStopTimeout bounds each pool's coming stop.
func (wp *workerPools) setStopTimeout(d time.Duration) {
	for _, name := range wp.names {
		wp.pools[name].SetStopTimeout(d)
	}
}

// setProcess sets every pool's row's process.
func (wp *workerPools) setProcess(pr queue.Process) {
	for _, name := range wp.names {
		wp.pools[name].SetProcess(pr)
	}
}

// cut ends every pool's shutdown grace at once.
func (wp *workerPools) cut() {
	for _, name := range wp.names {
		wp.pools[name].EndGrace()
	}
}

// register gives each pool a handler for each of cfg's tasks it runs. A
// task a reload removed keeps its handler until restart, so its queued
// jobs still run.
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

func (wp *workerPools) gauges() []poolGauge {
	var out []poolGauge
	for _, name := range wp.names {
		out = append(out, poolGauge{name: name, workers: wp.sizes[name], busy: wp.pools[name].Busy})
	}
	return out
}

// poolAttrs describes the pools for logs: "default=8 exports=1".
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
