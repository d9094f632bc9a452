package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/internal/pgproc"
	"github.com/scheduler-run/scheduler/queue"
)

const systemName = "scheduler"

// Configuration labels (the cfg= key). Every enqueue is fsynced on SQLite
// (synchronous=FULL), the queue's only setting; on PostgreSQL every commit
// waits as the server's synchronous_commit says.
const (
	cfgDefault = "default"
	cfgBatch   = "batch100"
	// cfgOtherConn enqueues through a second queue.Client on the same file:
	// its own connections, as the CLI's -trigger in another process has,
	// so the pool learns of each job only by watching the file.
	cfgOtherConn = "otherconn"
	// cfgProducers enqueues one job per call from producers goroutines at
	// once, whose calls share transactions.
	cfgProducers = "producers8"
	// cfgOtherNode, on PostgreSQL, enqueues through a second queue.Client
	// on the same database: a Store with connections of its own, as a
	// daemon on another host has, so that the pool hears of each job only
	// by LISTEN/NOTIFY (or its slow poll), not by the in-process wake.
	cfgOtherNode = "othernode"
)

var allCfgs = []string{cfgDefault, cfgBatch, cfgOtherConn, cfgProducers}

// producers is the number of enqueuing goroutines of the producers configs.
const producers = 8

// batchSize is the number of jobs per EnqueueBatch call in the batch configs.
const batchSize = 100

// jobType is the type of every benchmark job; its handler does nothing but
// record the job's sequence number.
const jobType = "noop"

// maxEnqueueErrs is how many failed enqueues a phase tolerates, each retried
// with the same sequence number, before it gives up.
const maxEnqueueErrs = 100

type bench struct {
	o       options
	stdout  io.Writer
	stderr  io.Writer
	files   dbFiles    // SQLite: each configuration's file
	schemas *pgSchemas // PostgreSQL: each configuration's schema

	syncCommit string // PostgreSQL: the server's synchronous_commit

	prof      *os.File
	profiling bool
}

// queueConfig is the queue.Config of the benchmark's queues.
func queueConfig(log *errLog) engine.Config {
	return engine.Config{Logger: log.logger()}
}

// place returns where cfg's queue is to live, fresh, and a function that
// removes it: on SQLite a file (kept with -db, else removed with the run's
// directory), on PostgreSQL a schema of its own, dropped by release. The
// queues on it must be closed before release.
func (b *bench) place(ctx context.Context, cfg string) (db string, release func() error, err error) {
	if b.schemas == nil {
		return b.files(cfg), func() error { return nil }, nil
	}
	dsn, syncCommit, drop, err := b.schemas.create(ctx, cfg)
	if err != nil {
		return "", nil, err
	}
	b.syncCommit = syncCommit
	return dsn, drop, nil
}

// releasePlace calls release in a defer, keeping the first error.
func releasePlace(release func() error, err *error) {
	if rerr := release(); *err == nil && rerr != nil {
		*err = rerr
	}
}

func (b *bench) open(ctx context.Context, cfg, db string, withPool bool, log *errLog) (*queue.Client, error) {
	q, err := openQueue(ctx, db, queueConfig(log))
	if err != nil {
		return nil, err
	}
	pool := "none"
	if withPool {
		pool = "queue.PoolConfig{Workers:" + strconv.Itoa(b.o.workers) + "}"
	}
	if b.schemas != nil {
		// Every commit waits for the server's WAL flush as the server's
		// synchronous_commit says (on by default), read back here.
		fmt.Fprintf(b.stderr, "info system=%s cfg=%s synchronous_commit=%s queue=queue.Config{} pool=%s go=%s gomaxprocs=%d\n",
			b.o.system(), cfg, b.syncCommit, pool, runtime.Version(), runtime.GOMAXPROCS(0))
		return q, nil
	}
	// This line states the configuration passed to the queue; the effective
	// pragmas are not read back, since this program runs no SQL on SQLite.
	fmt.Fprintf(b.stderr, "info system=%s cfg=%s enqueue_sync=FULL queue=queue.Config{} pool=%s go=%s gomaxprocs=%d\n",
		b.o.system(), cfg, pool, runtime.Version(), runtime.GOMAXPROCS(0))
	return q, nil
}

// newJob is the benchmark job carrying seq. Its key is left to the queue (a
// random one), as for any job enqueued without a dedup key.
func newJob(seq int) queue.NewJob {
	return queue.NewJob{Type: jobType, Payload: json.RawMessage(`{"seq":` + strconv.Itoa(seq) + `}`)}
}

// payloadSeq extracts seq from `{"seq":N}` without a JSON decoder, so that
// decoding costs nothing in the drain; -1 for anything else.
func payloadSeq(p []byte) int {
	const pre = `{"seq":`
	s := string(p)
	if len(s) < len(pre)+2 || s[:len(pre)] != pre || s[len(s)-1] != '}' {
		return -1
	}
	n, err := strconv.Atoi(s[len(pre) : len(s)-1])
	if err != nil {
		return -1
	}
	return n
}

// kv is one key=value field of a result line.
type kv struct {
	k string
	v any
}

// emit prints one result line in peerbench's format: floats with three
// decimals, rep= last.
func (b *bench) emit(cfg, phase string, fields ...kv) {
	var s strings.Builder
	fmt.Fprintf(&s, "system=%s cfg=%s phase=%s", b.o.system(), cfg, phase)
	for _, f := range fields {
		switch v := f.v.(type) {
		case float64:
			fmt.Fprintf(&s, " %s=%.3f", f.k, v)
		default:
			fmt.Fprintf(&s, " %s=%v", f.k, v)
		}
	}
	fmt.Fprintf(&s, " rep=%d\n", b.o.rep)
	io.WriteString(b.stdout, s.String())
}

// throughput runs the enqueue and drain phases of cfg=default, then the
// enqueue-only configurations.
func (b *bench) throughput(ctx context.Context) error {
	if err := b.enqueueDrain(ctx); err != nil {
		return err
	}
	if !b.o.extra {
		return nil
	}
	type enqueueCfg struct {
		cfg   string
		batch int
	}
	for _, c := range []enqueueCfg{{cfgBatch, batchSize}, {cfgProducers, 1}} {
		if err := b.enqueueOnly(ctx, c.cfg, c.batch); err != nil {
			return fmt.Errorf("%s: %w", c.cfg, err)
		}
	}
	return nil
}

// closeQueue closes q in a defer, keeping the first error.
func closeQueue(q *queue.Client, err *error) {
	if cerr := q.Close(); *err == nil && cerr != nil {
		*err = fmt.Errorf("close: %w", cerr)
	}
}

// enqueueDrain runs the enqueue and drain phases of cfg=default.
func (b *bench) enqueueDrain(ctx context.Context) (err error) {
	n, w := b.o.jobs, b.o.workers
	log := newErrLog(b.stderr)
	db, release, err := b.place(ctx, cfgDefault)
	if err != nil {
		return err
	}
	defer releasePlace(release, &err)
	q, err := b.open(ctx, cfgDefault, db, true, log)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeQueue(q, &err)

	if err := b.startProfile(profEnqueue); err != nil {
		return err
	}
	enq, err := enqueueAll(ctx, q, n, 1)
	if err != nil {
		return err
	}
	b.endProfile(profEnqueue)
	if err := b.emitEnqueue(ctx, q, cfgDefault, enq, log); err != nil {
		return err
	}

	rec := newRecorder(n)
	if err := b.startProfile(profDrain); err != nil {
		return err
	}
	s0 := b.readServerCPU()
	t0, c0 := time.Now(), cpuTime()
	p, err := newPool(q, w, rec)
	if err != nil {
		return err
	}
	stopPool := runPool(ctx, p)
	defer stopPool()
	dbDone, werr := waitAll(ctx, q, rec, b.o.stall)
	drainSecs := time.Since(t0).Seconds()
	drainCPU, srvCPU := cpuSince(c0), b.serverCPUSince(s0)
	b.endProfile(profDrain)
	handledSecs := float64(rec.last.Load())/1e9 - float64(t0.Sub(rec.base))/1e9
	if err := stopPool(); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if st, err := q.Stats(ctx); err == nil {
		dbDone = st.Total[queue.StateDone]
	}
	dup, lost := rec.tally()
	fields := []kv{{"jobs", n}, {"workers", w},
		{"seconds", drainSecs}, {"jobs_per_s", float64(n-lost) / drainSecs}, {"dup", dup}, {"lost", lost},
		{"db_done", dbDone}, {"handled_s", handledSecs}, {"errs", log.count()}, {"cpu_s", drainCPU}}
	if srvCPU >= 0 {
		// The server's CPU on this host: its background processes and the
		// backends of the run's database.
		fields = append(fields, kv{"srv_cpu_s", srvCPU})
	}
	b.emit(cfgDefault, "drain", fields...)
	if werr != nil {
		fmt.Fprintf(b.stderr, "scheduler-bench: drain: %v\n", werr)
	}
	return nil
}

// enqueueOnly runs the enqueue phase of cfg on its own fresh file.
func (b *bench) enqueueOnly(ctx context.Context, cfg string, batch int) (err error) {
	log := newErrLog(b.stderr)
	db, release, err := b.place(ctx, cfg)
	if err != nil {
		return err
	}
	defer releasePlace(release, &err)
	q, err := b.open(ctx, cfg, db, false, log)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeQueue(q, &err)
	var enq enqueueResult
	if cfg == cfgProducers {
		enq, err = enqueueConcurrently(ctx, q, b.o.jobs, producers)
	} else {
		enq, err = enqueueAll(ctx, q, b.o.jobs, batch)
	}
	if err != nil {
		return err
	}
	return b.emitEnqueue(ctx, q, cfg, enq, log)
}

// enqueueConcurrently enqueues jobs 0..n-1 one per call from p goroutines,
// each taking every p-th sequence number.
func enqueueConcurrently(ctx context.Context, q *queue.Client, n, p int) (enqueueResult, error) {
	var r enqueueResult
	t0, c0 := time.Now(), cpuTime()
	var wg sync.WaitGroup
	errs := make(chan error, p)
	var mu sync.Mutex
	for g := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; {
				if _, err := q.Enqueue(ctx, newJob(i)); err != nil {
					if ctx.Err() != nil {
						errs <- ctx.Err()
						return
					}
					mu.Lock()
					r.errs++
					tooMany := r.errs > maxEnqueueErrs
					mu.Unlock()
					if tooMany {
						errs <- fmt.Errorf("enqueue: too many errors, last: %w", err)
						return
					}
					continue
				}
				i += p
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return r, err
	}
	r.secs = time.Since(t0).Seconds()
	r.cpu = cpuSince(c0)
	return r, nil
}

// enqueueResult is the measurement of one enqueue phase.
type enqueueResult struct {
	secs float64
	cpu  float64
	errs int
}

// enqueueAll enqueues jobs 0..n-1 from one goroutine, batch jobs per call
// (one transaction each). A failed call is retried with the same jobs.
func enqueueAll(ctx context.Context, q *queue.Client, n, batch int) (enqueueResult, error) {
	var r enqueueResult
	jobs := make([]queue.NewJob, 0, batch)
	t0, c0 := time.Now(), cpuTime()
	for i := 0; i < n; {
		var err error
		if batch == 1 {
			_, err = q.Enqueue(ctx, newJob(i))
		} else {
			jobs = jobs[:0]
			for k := i; k < min(i+batch, n); k++ {
				jobs = append(jobs, newJob(k))
			}
			_, err = q.EnqueueBatch(ctx, jobs)
		}
		if err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			r.errs++
			if r.errs > maxEnqueueErrs {
				return r, fmt.Errorf("enqueue: too many errors, last: %w", err)
			}
			continue
		}
		i += batch
	}
	r.secs = time.Since(t0).Seconds()
	r.cpu = cpuSince(c0)
	return r, nil
}

// emitEnqueue prints an enqueue line. dup and lost compare the number of
// jobs the database holds with the number enqueued.
func (b *bench) emitEnqueue(ctx context.Context, q *queue.Client, cfg string, r enqueueResult, log *errLog) error {
	n := b.o.jobs
	st, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	inDB := 0
	for _, c := range st.Total {
		inDB += c
	}
	dup, lost := max(inDB-n, 0), max(n-inDB, 0)
	batch, workers := 1, 1
	switch cfg {
	case cfgBatch:
		batch = batchSize
	case cfgProducers:
		workers = producers
	}
	b.emit(cfg, "enqueue", kv{"jobs", n}, kv{"workers", workers},
		kv{"seconds", r.secs}, kv{"jobs_per_s", float64(n) / r.secs}, kv{"dup", dup}, kv{"lost", lost},
		kv{"db_jobs", inDB}, kv{"batch", batch}, kv{"errs", r.errs + log.count()}, kv{"cpu_s", r.cpu})
	return nil
}

// newPool returns a pool with default settings except Workers, whose one
// handler records each job's sequence number in rec.
func newPool(q *queue.Client, workers int, rec *recorder) (*queue.Pool, error) {
	p, err := queue.NewPool(q, queue.PoolConfig{Workers: workers})
	if err != nil {
		return nil, err
	}
	h := queue.HandlerFunc(func(_ context.Context, j *queue.Job) error {
		rec.handle(payloadSeq(j.Payload))
		return nil
	})
	if err := p.Register(jobType, h, queue.TypeConfig{}); err != nil {
		return nil, err
	}
	return p, nil
}

// runPool starts p.Run and returns a function that stops it and waits for it
// to return; calls after the first return the same result.
func runPool(ctx context.Context, p *queue.Pool) (stop func() error) {
	ctx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			cancel()
			err = <-ran
		})
		return err
	}
}

// waitAll waits until every job ran once and the queue counts all n done,
// giving up after stall without progress. The second condition is what makes
// the clock include the recording of the completions, not only the handlers.
func waitAll(ctx context.Context, q *queue.Client, rec *recorder, stall time.Duration) (dbDone int, err error) {
	lastProgress := time.Now()
	lastDistinct := int64(-1)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-rec.allDone:
			break wait
		case <-tick.C:
			if d := rec.distinct.Load(); d != lastDistinct {
				lastDistinct, lastProgress = d, time.Now()
			} else if time.Since(lastProgress) > stall {
				st, _ := q.Stats(ctx)
				return st.Total[queue.StateDone], fmt.Errorf("stalled: %d/%d jobs handled, no progress for %s", d, rec.n, stall)
			}
		}
	}
	lastProgress = time.Now()
	lastN := -1
	for {
		st, err := q.Stats(ctx)
		n := st.Total[queue.StateDone]
		if err == nil && n >= rec.n {
			return n, nil
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if n != lastN {
			lastN, lastProgress = n, time.Now()
		} else if time.Since(lastProgress) > stall {
			if err != nil {
				return n, fmt.Errorf("stalled: db shows %d/%d done: %w", n, rec.n, err)
			}
			return n, fmt.Errorf("stalled: db shows %d/%d done", n, rec.n)
		}
		time.Sleep(2 * time.Millisecond) // polling period of the done count, as in peerbench
	}
}

// latency runs the latency phase of cfg=default, then on PostgreSQL of
// cfg=othernode and otherproc, and on SQLite, with -latother, of
// cfg=otherconn, each on a fresh file or schema with a fresh pool.
func (b *bench) latency(ctx context.Context) error {
	cfgs := []string{cfgDefault}
	switch {
	case b.schemas != nil:
		cfgs = append(cfgs, cfgOtherNode, cfgOtherProc)
	case b.o.latOther:
		cfgs = append(cfgs, cfgOtherConn)
	}
	for _, cfg := range cfgs {
		if err := b.latencyRun(ctx, cfg); err != nil {
			return fmt.Errorf("%s: %w", cfg, err)
		}
	}
	return nil
}

func (b *bench) latencyRun(ctx context.Context, cfg string) (err error) {
	n, w, every := b.o.latJobs, b.o.workers, b.o.latEvery
	log := newErrLog(b.stderr)
	db, release, err := b.place(ctx, cfg)
	if err != nil {
		return err
	}
	defer releasePlace(release, &err)
	q, err := b.open(ctx, cfg, db, true, log)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer closeQueue(q, &err)
	rec := newRecorder(n)
	p, err := newPool(q, w, rec)
	if err != nil {
		return err
	}
	stopPool := runPool(ctx, p)
	defer stopPool()
	producer := q
	if cfg == cfgOtherConn || cfg == cfgOtherNode {
		if producer, err = openQueue(ctx, db, queueConfig(log)); err != nil {
			return fmt.Errorf("open producer: %w", err)
		}
		defer closeQueue(producer, &err)
	}
	if err := sleepCtx(ctx, b.o.warmup); err != nil { // the pool is running and idle
		return err
	}

	profile := cfg == cfgDefault
	if profile {
		if err := b.startProfile(profLatency); err != nil {
			return err
		}
	}
	t0, c0 := time.Now(), cpuTime()
	var maxBehind time.Duration
	enqErrs := 0
	var producerDone func() (int, error)
	if cfg == cfgOtherProc {
		if producerDone, err = b.produceElsewhere(ctx, db, rec); err != nil {
			return err
		}
	} else if maxBehind, enqErrs, err = produceHere(ctx, producer, rec, t0, n, every); err != nil {
		return err
	}
	enqSecs := time.Since(t0).Seconds()
	dbDone, werr := waitAll(ctx, q, rec, b.o.stall)
	totalSecs := time.Since(t0).Seconds()
	latCPU := cpuSince(c0)
	if profile {
		b.endProfile(profLatency)
	}
	if err := stopPool(); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if st, err := q.Stats(ctx); err == nil {
		dbDone = st.Total[queue.StateDone]
	}
	if producerDone != nil {
		errs, err := producerDone()
		if err != nil {
			return err
		}
		enqErrs += errs
	}
	dup, lost := rec.tally()
	lats := rec.latenciesMS()
	b.emit(cfg, "latency", kv{"jobs", n}, kv{"workers", w},
		kv{"seconds", totalSecs}, kv{"jobs_per_s", float64(n-lost) / totalSecs}, kv{"dup", dup}, kv{"lost", lost},
		kv{"p50_ms", pct(lats, 50)}, kv{"p90_ms", pct(lats, 90)}, kv{"p99_ms", pct(lats, 99)}, kv{"max_ms", pct(lats, 100)},
		kv{"mean_ms", mean(lats)}, kv{"enq_s", enqSecs}, kv{"enq_behind_max_ms", float64(maxBehind) / 1e6},
		kv{"db_done", dbDone}, kv{"errs", log.count() + enqErrs}, kv{"cpu_s", latCPU})
	if werr != nil {
		fmt.Fprintf(b.stderr, "scheduler-bench: latency: %v\n", werr)
	}
	return nil
}

// produceHere enqueues n jobs on producer, one every every from t0, and
// records when each was enqueued. It returns how far behind its schedule
// an enqueue fell at most, and how many enqueues failed and were retried.
func produceHere(ctx context.Context, producer *queue.Client, rec *recorder, t0 time.Time, n int, every time.Duration) (maxBehind time.Duration, enqErrs int, err error) {
	for i := 0; i < n; i++ {
		due := t0.Add(time.Duration(i) * every)
		if d := time.Until(due); d > 0 {
			if err := sleepCtx(ctx, d); err != nil {
				return maxBehind, enqErrs, err
			}
		} else if -d > maxBehind {
			maxBehind = -d
		}
		rec.enqAt[i].Store(rec.now())
		for {
			_, err := producer.Enqueue(ctx, newJob(i))
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return maxBehind, enqErrs, ctx.Err()
			}
			enqErrs++
			if enqErrs > maxEnqueueErrs {
				return maxBehind, enqErrs, fmt.Errorf("enqueue: too many errors, last: %w", err)
			}
		}
	}
	return maxBehind, enqErrs, nil
}

// endProfile stops the CPU profile if it covers exactly phase.
func (b *bench) endProfile(phase string) {
	if b.o.profPhase == phase {
		b.stopProfile()
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// cpuSince returns process CPU seconds (user+sys, all goroutines) since c0,
// or -1 where that is not measured.
func cpuSince(c0 time.Duration) float64 {
	c1 := cpuTime()
	if c0 < 0 || c1 < 0 {
		return -1
	}
	return (c1 - c0).Seconds()
}

// pct is the nearest-rank percentile of sorted xs, -1 for none.
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	idx := int(float64(len(xs))*p/100+0.999999) - 1
	idx = max(0, min(idx, len(xs)-1))
	return xs[idx]
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return -1
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// latenciesMS returns the enqueue-to-start latency of every job that ran, in
// milliseconds, sorted.
func (r *recorder) latenciesMS() []float64 {
	lats := make([]float64, 0, r.n)
	for i := range r.counts {
		if r.counts[i].Load() > 0 {
			lats = append(lats, float64(r.startLat[i].Load())/1e6)
		}
	}
	sort.Float64s(lats)
	return lats
}

// readServerCPU reads the processes of the server of -dsn, if it runs on
// this host; nil on SQLite.
func (b *bench) readServerCPU() pgproc.Snapshot {
	if b.o.dsn == "" {
		return nil
	}
	return pgproc.Read()
}

// serverCPUSince returns the CPU seconds the server's background processes
// and the backends of -dsn's database spent since s0, or -1.
func (b *bench) serverCPUSince(s0 pgproc.Snapshot) float64 {
	cfg, err := pgx.ParseConfig(b.o.dsn)
	if err != nil || s0 == nil {
		return -1
	}
	d := pgproc.CPU(s0, pgproc.Read(), func(p pgproc.Process) bool { return p.Database == cfg.Database })
	if d < 0 {
		return -1
	}
	return d.Seconds()
}
