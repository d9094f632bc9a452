package cli

import (
	"context"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
)

// The label values the metrics pre-create, so that a rate over a series that
// has never moved reads 0, not nothing.
var (
	// finishOutcomes are the outcome label's values of
	// scheduler_jobs_finished_total.
	finishOutcomes = []string{outcomeSucceeded, outcomeRetried, outcomeDead, outcomeTimedOut, outcomeCancelled}
	// skipReasons are the reason label's values of
	// scheduler_runs_skipped_total.
	skipReasons = []store.SkipReason{store.SkipMisfire, store.SkipOverlap, store.SkipPaused, store.SkipDST}
	// alarmKinds are the reason label's values of
	// scheduler_alarms_raised_total: the kinds of alarm.
	alarmKinds = []string{"late", "missed", "dead", "misfire", "recovered"}
	// jobStates are the state label's values of scheduler_jobs.
	jobStates = []queue.State{queue.StatePending, queue.StateRunning, queue.StateDone, queue.StateDead, queue.StateCancelled}
)

// The outcome label's values: how an attempt ended.
const (
	outcomeSucceeded = "succeeded"
	outcomeRetried   = "retried"
	outcomeDead      = "dead"
	outcomeTimedOut  = "timed_out" // the task's timeout ended it, retried or dead
	outcomeCancelled = "cancelled"
)

// The label names.
const (
	labelSchedule = "schedule"
	labelTask     = "task"
	labelState    = "state"
	labelOutcome  = "outcome"
	labelReason   = "reason"
	labelPool     = "pool"
)

// scrapeTimeout bounds the database reads of one scrape.
const scrapeTimeout = 10 * time.Second

// durationBuckets are the buckets of the job duration and start delay
// histograms, in seconds: from a millisecond to six hours.
var durationBuckets = []float64{.001, .005, .025, .1, .5, 1, 5, 15, 60, 300, 900, 3600, 6 * 3600}

// metrics is the daemon's Prometheus registry: counters and histograms fed by
// the pool's and the beat's func fields, and gauges read from the database
// at each scrape (metricsCollector), so that they are right whatever
// daemon or node changed the rows. It is safe for concurrent use.
type metrics struct {
	reg *prometheus.Registry

	materialised *prometheus.CounterVec
	skipped      *prometheus.CounterVec
	finished     *prometheus.CounterVec
	reclaimed    prometheus.Counter
	alarms       *prometheus.CounterVec
	notifyFailed *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	startDelay   *prometheus.HistogramVec

	db *metricsCollector

	// DeadlineFunc, when set, gives a schedule's current deadline: the
	// instant by which its run must succeed. Nil, or false for a
	// schedule, leaves its scheduler_schedule_deadline_timestamp_seconds
	// series out. Set it before the listener serves: a scrape calls it
	// from the server's goroutines, which must make it safe for
	// concurrent use.
	DeadlineFunc func(schedule string) (time.Time, bool)
	// AgreementFunc, when set, gives what the live daemons run as the
	// beat last read it (schedule.Beat.Agreement), for
	// scheduler_daemons_configs and scheduler_beat_materialising; false
	// leaves them out. Set it before the listener serves; it must be safe
	// for concurrent use.
	AgreementFunc func() (schedule.Agreement, bool)
}

// poolGauge is what the metrics read of one worker pool: its name, its
// workers, and how many of them run a job now (safe for concurrent use).
type poolGauge struct {
	name    string
	workers int
	busy    func() int
}

// newMetrics returns the metrics of a daemon on q running cfg, its build
// version, its worker pools and the outcome of its writes given.
func newMetrics(q *queue.Client, cfg *schedule.Config, version string, pools []poolGauge, w *writes, log *slog.Logger) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.materialised = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_runs_materialised_total",
		Help: "Jobs the beat inserted for a schedule's instants: one per fan-out item of each run.",
	}, []string{labelSchedule})
	m.skipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_runs_skipped_total",
		Help: "Runs of a schedule the beat recorded as skipped, by reason (misfire, overlap, paused, dst).",
	}, []string{labelSchedule, labelReason})
	m.finished = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_jobs_finished_total",
		Help: "Attempts this daemon finished, by task and outcome (succeeded, retried, dead, timed_out, cancelled; timed_out counts a timeout whether retried or dead).",
	}, []string{labelTask, labelOutcome})
	m.reclaimed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "scheduler_leases_reclaimed_total",
		Help: "Expired leases of vanished workers this daemon took back.",
	})
	m.alarms = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_alarms_raised_total",
		Help: "Alarms raised, by schedule and kind (reason: late, missed, dead, misfire, recovered).",
	}, []string{labelSchedule, labelReason})
	m.notifyFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_notifications_failed_total",
		Help: "Alarm notifications whose task failed, by notification task.",
	}, []string{labelTask})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_job_duration_seconds",
		Help:    "How long attempts ran, by task.",
		Buckets: durationBuckets,
	}, []string{labelTask})
	m.startDelay = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_job_start_delay_seconds",
		Help:    "How long after it was due (its run_at) an attempt started, by task.",
		Buckets: durationBuckets,
	}, []string{labelTask})
	m.db = &metricsCollector{q: q, m: m, clock: q.Clock(), log: log, cfg: cfg}

	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scheduler_build_info",
		Help: "Always 1; its labels give the version of the program and of Go.",
	}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(version, runtime.Version()).Set(1)

	writable := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "scheduler_database_writable",
		Help: "1 while the daemon's last write to the database (a pool's or the beat's transaction) committed; 0 from a write that failed until one commits.",
	}, func() float64 {
		if w.failed() != nil {
			return 0
		}
		return 1
	})

	m.reg.MustRegister(m.materialised, m.skipped, m.finished, m.reclaimed, m.alarms, m.notifyFailed,
		m.duration, m.startDelay, buildInfo, writable, m.db)
	// One series per pool, labelled with its name ("default" for the
	// tasks of no [pools.NAME]): a sum over pool is the daemon's.
	for _, p := range pools {
		m.reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "scheduler_workers",
				Help:        "Workers of this daemon's pool: jobs it runs at once at most.",
				ConstLabels: prometheus.Labels{labelPool: p.name},
			}, func() float64 { return float64(p.workers) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "scheduler_workers_busy",
				Help:        "Workers of this daemon's pool running a job now.",
				ConstLabels: prometheus.Labels{labelPool: p.name},
			}, func() float64 { return float64(p.busy()) }),
		)
	}
	m.precreate(cfg)
	return m
}

// setConfig makes the series of cfg's schedules and tasks exist at 0 and
// makes the scrape read cfg: after a reload. Series of schedules and tasks
// that cfg no longer has stay until restart, as their counts do.
func (m *metrics) setConfig(cfg *schedule.Config) {
	m.db.setConfig(cfg)
	m.precreate(cfg)
}

func (m *metrics) precreate(cfg *schedule.Config) {
	for _, s := range cfg.Schedules {
		m.materialised.WithLabelValues(s.Name)
		for _, r := range skipReasons {
			m.skipped.WithLabelValues(s.Name, string(r))
		}
		for _, k := range alarmKinds {
			m.alarms.WithLabelValues(s.Name, k)
		}
	}
	for _, name := range taskNames(cfg) {
		for _, o := range finishOutcomes {
			m.finished.WithLabelValues(name, o)
		}
		m.duration.WithLabelValues(name)
		m.startDelay.WithLabelValues(name)
		m.notifyFailed.WithLabelValues(name)
	}
}

// jobFinished counts an attempt's end: queue.PoolConfig.FinishedFunc. A
// release at shutdown gives the attempt back: it counts nowhere.
func (m *metrics) jobFinished(f queue.Finished) {
	var outcome string
	switch {
	case f.Outcome == queue.OutcomeReleased:
		return
	case f.TimedOut:
		outcome = outcomeTimedOut
	case f.Outcome == queue.OutcomeDone:
		outcome = outcomeSucceeded
	case f.Outcome == queue.OutcomeRetry:
		outcome = outcomeRetried
	case f.Outcome == queue.OutcomeDead:
		outcome = outcomeDead
	case f.Outcome == queue.OutcomeCancelled:
		outcome = outcomeCancelled
	default:
		return
	}
	m.finished.WithLabelValues(f.Type, outcome).Inc()
	m.duration.WithLabelValues(f.Type).Observe(f.Finished.Sub(f.Started).Seconds())
	m.startDelay.WithLabelValues(f.Type).Observe(max(f.Started.Sub(f.Due), 0).Seconds())
}

// leasesReclaimed counts reclaimed leases: queue.PoolConfig.ReclaimedFunc.
func (m *metrics) leasesReclaimed(n int) { m.reclaimed.Add(float64(n)) }

// runsMaterialised counts the jobs of a beat's commit:
// schedule.BeatConfig.MaterialisedFunc.
func (m *metrics) runsMaterialised(schedule string, jobs int) {
	m.materialised.WithLabelValues(schedule).Add(float64(jobs))
}

// runsSkipped counts the skips of a beat's commit:
// schedule.BeatConfig.SkippedFunc.
func (m *metrics) runsSkipped(schedule string, reason store.SkipReason, runs int) {
	m.skipped.WithLabelValues(schedule, string(reason)).Add(float64(runs))
}

// AlarmRaised counts an alarm of kind (late, missed, dead, misfire or
// recovered) raised for schedule. On a nil *metrics (no listener) it does
// nothing. It is safe for concurrent use.
func (m *metrics) AlarmRaised(schedule, kind string) {
	if m != nil {
		m.alarms.WithLabelValues(schedule, kind).Inc()
	}
}

// NotificationFailed counts a failed notification of task. On a nil
// *metrics (no listener) it does nothing. It is safe for concurrent use.
func (m *metrics) NotificationFailed(task string) {
	if m != nil {
		m.notifyFailed.WithLabelValues(task).Inc()
	}
}

// metricsCollector reads the gauges that reflect the database at each
// scrape: jobs by task and state, each task's oldest ready job, and per
// schedule its last success and completion, next run and pause; and the
// beat's view of the daemons' configs.
type metricsCollector struct {
	q     *queue.Client
	m     *metrics
	clock clock.Clock
	log   *slog.Logger

	mu  sync.Mutex
	cfg *schedule.Config
}

func (c *metricsCollector) setConfig(cfg *schedule.Config) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfg = cfg
}

var (
	descJobs = prometheus.NewDesc("scheduler_jobs",
		"Jobs in the database by task and state (every daemon's).", []string{labelTask, labelState}, nil)
	descOldestReady = prometheus.NewDesc("scheduler_oldest_ready_job_timestamp_seconds",
		"When the oldest job of a task that is ready to run became ready (its run_at); absent while none waits.", []string{labelTask}, nil)
	descLastSuccess = prometheus.NewDesc("scheduler_schedule_last_success_timestamp_seconds",
		"When the newest successful job of a schedule finished; 0 when none is kept.", []string{labelSchedule}, nil)
	descLastCompletion = prometheus.NewDesc("scheduler_schedule_last_completion_timestamp_seconds",
		"When the newest job of a schedule that succeeded or went dead finished; 0 when none is kept.", []string{labelSchedule}, nil)
	descNextRun = prometheus.NewDesc("scheduler_schedule_next_run_timestamp_seconds",
		"The next instant of a schedule; absent while it is paused.", []string{labelSchedule}, nil)
	descDeadline = prometheus.NewDesc("scheduler_schedule_deadline_timestamp_seconds",
		"When the current run of a schedule must have succeeded by; absent when it has no deadline.", []string{labelSchedule}, nil)
	descPaused = prometheus.NewDesc("scheduler_schedule_paused",
		"1 while a schedule is paused, else 0.", []string{labelSchedule}, nil)
	descDatabaseUp = prometheus.NewDesc("scheduler_database_up",
		"1 when the scrape read the database, 0 when a read failed (the gauges read from it are then absent).", nil, nil)
	descDaemonsConfigs = prometheus.NewDesc("scheduler_daemons_configs",
		"Distinct configs the live daemons on the database run, as this daemon's beat last read their rows: 1 when they agree.", nil, nil)
	descMaterialising = prometheus.NewDesc("scheduler_beat_materialising",
		"1 while this daemon's beat materialises instants (its config is the newest among the live daemons'), 0 while it sits out.", nil, nil)
)

// Describe sends the collector's descriptions.
func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descOldestReady, descLastSuccess, descLastCompletion, descNextRun, descDeadline, descPaused, descDatabaseUp,
		descDaemonsConfigs, descMaterialising} {
		ch <- d
	}
}

// Collect reads the database and sends the gauges. A read that fails
// leaves the gauges it would have given out and sets
// scheduler_database_up to 0, so that the rest of the scrape still serves.
func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	cfg := c.cfg
	c.mu.Unlock()
	if f := c.m.AgreementFunc; f != nil {
		if a, ok := f(); ok {
			materialising := 0.0
			if a.SelfRules {
				materialising = 1
			}
			ch <- prometheus.MustNewConstMetric(descDaemonsConfigs, prometheus.GaugeValue, float64(a.Configs))
			ch <- prometheus.MustNewConstMetric(descMaterialising, prometheus.GaugeValue, materialising)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if err := c.collect(ctx, cfg, ch); err != nil {
		c.log.Error("metrics: database read failed", "err", err)
		ch <- prometheus.MustNewConstMetric(descDatabaseUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descDatabaseUp, prometheus.GaugeValue, 1)
}

func (c *metricsCollector) collect(ctx context.Context, cfg *schedule.Config, ch chan<- prometheus.Metric) error {
	st, err := c.q.Stats(ctx)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(cfg.Schedules))
	for _, s := range cfg.Schedules {
		names = append(names, s.Name)
	}
	fin, err := c.q.Finishes(ctx, names)
	if err != nil {
		return err
	}
	cursors, err := c.q.Cursors(ctx)
	if err != nil {
		return err
	}
	now := c.clock.Now()

	// Every configured task in every state, and any other type the
	// database holds (a task a reload removed, a Go type).
	tasks := map[string]bool{}
	for name := range cfg.Tasks {
		tasks[name] = true
	}
	for _, byType := range st.Counts {
		for typ := range byType {
			tasks[typ] = true
		}
	}
	for _, task := range slices.Sorted(maps.Keys(tasks)) {
		for _, state := range jobStates {
			ch <- prometheus.MustNewConstMetric(descJobs, prometheus.GaugeValue, float64(st.Counts[state][task]), task, string(state))
		}
	}
	for _, task := range slices.Sorted(maps.Keys(st.ReadySince)) {
		ch <- prometheus.MustNewConstMetric(descOldestReady, prometheus.GaugeValue, seconds(st.ReadySince[task]), task)
	}
	for _, s := range cfg.Schedules {
		f := fin[s.Name]
		ch <- prometheus.MustNewConstMetric(descLastSuccess, prometheus.GaugeValue, seconds(f.LastSuccess), s.Name)
		ch <- prometheus.MustNewConstMetric(descLastCompletion, prometheus.GaugeValue, seconds(f.LastCompletion), s.Name)
		cur, ok := cursors[s.Name]
		paused := 0.0
		if cur.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, paused, s.Name)
		if !cur.Paused {
			from := now
			if ok && cur.At.After(from) {
				from = cur.At
			}
			if next := s.Next(from); !next.IsZero() {
				ch <- prometheus.MustNewConstMetric(descNextRun, prometheus.GaugeValue, seconds(next), s.Name)
			}
		}
		if f := c.m.DeadlineFunc; f != nil {
			if at, ok := f(s.Name); ok {
				ch <- prometheus.MustNewConstMetric(descDeadline, prometheus.GaugeValue, seconds(at), s.Name)
			}
		}
	}
	return nil
}

// seconds is t as Unix seconds, 0 for the zero time.
func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMilli()) / 1000
}
