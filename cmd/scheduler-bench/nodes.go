package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// nodesBatch is the EnqueueBatch size that fills the queue of a nodes run
// before its clock starts.
const nodesBatch = 1000

// nodes runs the drain of -jobs jobs by one node, then by -nodes nodes on
// one database, each node a queue.Client of its own (its own Store, its own
// connections, so that nodes learn of each other's work only through the
// database) with a pool of -workers workers, all in this process. The jobs
// are enqueued before the clock starts, with EnqueueBatch. The line of the
// several nodes carries x_nodes1, its jobs per second over the one node's.
func (b *bench) nodes(ctx context.Context) error {
	one, err := b.nodesRun(ctx, 1, 0)
	if err != nil {
		return fmt.Errorf("nodes1: %w", err)
	}
	if b.o.nodes == 1 {
		return nil
	}
	if _, err := b.nodesRun(ctx, b.o.nodes, one); err != nil {
		return fmt.Errorf("nodes%d: %w", b.o.nodes, err)
	}
	return nil
}

// nodesRun drains the jobs with n nodes and returns the jobs per second;
// base, when positive, is the one node's, for the ratio.
func (b *bench) nodesRun(ctx context.Context, n int, base float64) (jps float64, err error) {
	jobs, w := b.o.jobs, b.o.workers
	cfg := "nodes" + strconv.Itoa(n)
	log := newErrLog(b.stderr)
	db, release, err := b.place(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer releasePlace(release, &err)
	qs := make([]*queue.Client, n)
	for i := range qs {
		var q *queue.Client
		if i == 0 {
			q, err = b.open(ctx, cfg, db, true, log)
		} else {
			q, err = openQueue(ctx, db, queueConfig(log))
		}
		if err != nil {
			return 0, fmt.Errorf("open node %d: %w", i+1, err)
		}
		defer closeQueue(q, &err)
		qs[i] = q
	}
	if _, err := enqueueAll(ctx, qs[0], jobs, min(nodesBatch, jobs)); err != nil {
		return 0, err
	}
	rec := newRecorder(jobs)
	pools := make([]*queue.Pool, n)
	for i, q := range qs {
		if pools[i], err = newPool(q, w, rec); err != nil {
			return 0, err
		}
	}
	s0 := b.readServerCPU()
	t0, c0 := time.Now(), cpuTime()
	stops := make([]func() error, n)
	for i, p := range pools {
		stops[i] = runPool(ctx, p)
		defer stops[i]()
	}
	dbDone, werr := waitAll(ctx, qs[0], rec, b.o.stall)
	secs := time.Since(t0).Seconds()
	cpu, srv := cpuSince(c0), b.serverCPUSince(s0)
	for i, stop := range stops {
		if err := stop(); err != nil {
			return 0, fmt.Errorf("pool of node %d: %w", i+1, err)
		}
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	if st, err := qs[0].Stats(ctx); err == nil {
		dbDone = st.Total[queue.StateDone]
	}
	dup, lost := rec.tally()
	jps = float64(jobs-lost) / secs
	fields := []kv{{"jobs", jobs}, {"workers", w}, {"nodes", n},
		{"seconds", secs}, {"jobs_per_s", jps}, {"dup", dup}, {"lost", lost},
		{"db_done", dbDone}, {"errs", log.count()}, {"cpu_s", cpu}}
	if srv >= 0 {
		fields = append(fields, kv{"srv_cpu_s", srv})
	}
	if base > 0 {
		fields = append(fields, kv{"x_nodes1", jps / base})
	}
	b.emit(cfg, "drain", fields...)
	if werr != nil {
		fmt.Fprintf(b.stderr, "scheduler-bench: %s drain: %v\n", cfg, werr)
	}
	return jps, nil
}
