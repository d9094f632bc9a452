package daemon

import (
	"log/slog"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// The label values the metrics pre-create, so that a rate over a series
// that never moved reads 0, not nothing.
var (
	// finishOutcomes label scheduler_jobs_finished_total.
	finishOutcomes = []string{outcomeSucceeded, outcomeRetried, outcomeDead, outcomeTimedOut, outcomeCancelled}
	// skipReasons label scheduler_runs_skipped_total.
	skipReasons = []store.SkipReason{store.SkipMisfire, store.SkipOverlap, store.SkipPaused, store.SkipDST}
	// alarmKinds label scheduler_alarms_raised_total.
	alarmKinds = []string{"late", "missed", "dead", "misfire", "recovered", "upstream"}
	// incidentKinds label scheduler_incidents_open.
	incidentKinds = []string{"late", "missed", "dead", "misfire", "upstream"}
	// jobStates label scheduler_jobs.
	jobStates = []queue.State{queue.StatePending, queue.StateRunning, queue.StateDone, queue.StateDead, queue.StateCancelled, queue.StateDiscarded}
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
	labelKind     = "kind"
)

// scrapeTimeout bounds the database reads of one scrape.
const scrapeTimeout = 10 * time.Second

// durationBuckets are the duration and start delay buckets, in seconds.
var durationBuckets = []float64{.001, .005, .025, .1, .5, 1, 5, 15, 60, 300, 900, 3600, 6 * 3600}

// metrics is the daemon's Prometheus registry: counters fed by the pools
// and the beat, and gauges read from the database at each scrape, so that
// they are right whichever node changed the rows. It is safe for
// concurrent use.
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

	// Set before the listener serves; scrapes call them concurrently.
	// DeadlineFunc gives the instant by which a schedule's current run
	// must succeed; nil or false leaves its deadline series out.
	DeadlineFunc func(schedule string) (time.Time, bool)
	// AgreementFunc gives the live daemons' configs as the beat last read
	// them; nil or false leaves the agreement gauges out.
	AgreementFunc func() (schedule.Agreement, bool)
}

// poolGauge is what the metrics read of one worker pool; busy is safe for
// concurrent use.
type poolGauge struct {
	name    string
	workers int
	busy    func() int
}

func newMetrics(q *queue.Client, cfg *config.Config, version string, pools []poolGauge, w *writes, log *slog.Logger) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.newCounters()
	m.db = &metricsCollector{q: q, m: m, clock: q.Clock(), log: log, cfg: cfg}
	m.reg.MustRegister(m.materialised, m.skipped, m.finished, m.reclaimed, m.alarms, m.notifyFailed,
		m.duration, m.startDelay, buildInfo(version), writable(w), m.db,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registerPools(pools)
	m.precreate(cfg)
	return m
}

// newCounters makes the counters and histograms.
func (m *metrics) newCounters() {
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
}

// buildInfo is scheduler_build_info.
func buildInfo(version string) prometheus.Collector {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scheduler_build_info",
		Help: "Always 1; its labels give the version of the program and of Go.",
	}, []string{"version", "goversion"})
	g.WithLabelValues(version, runtime.Version()).Set(1)
	return g
}

// writable is scheduler_database_writable, read from w.
func writable(w *writes) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "scheduler_database_writable",
		Help: "1 while the daemon's last write to the database (a pool's or the beat's transaction) committed; 0 from a write that failed until one commits.",
	}, func() float64 {
		if w.failed() != nil {
			return 0
		}
		return 1
	})
}

// registerPools registers one series per pool, so that a sum over pool is
// the daemon's.
func (m *metrics) registerPools(pools []poolGauge) {
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
}

// setConfig makes scrapes read cfg after a reload, and precreates its
// series. Series cfg no longer has stay until restart, as their counts do.
func (m *metrics) setConfig(cfg *config.Config) {
	m.db.setConfig(cfg)
	m.precreate(cfg)
}

// precreate makes the series of cfg's schedules and tasks exist at 0.
func (m *metrics) precreate(cfg *config.Config) {
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

// jobFinished counts an attempt's end. A release at shutdown gives the
// attempt back and counts nowhere.
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

// leasesReclaimed counts reclaimed leases.
func (m *metrics) leasesReclaimed(n int) { m.reclaimed.Add(float64(n)) }

// beatEvent counts the beat's jobs materialised, runs skipped and alarms.
func (m *metrics) beatEvent(e schedule.Event) {
	switch e := e.(type) {
	case schedule.Materialised:
		m.materialised.WithLabelValues(e.Schedule).Add(float64(e.Jobs))
	case schedule.Skipped:
		m.skipped.WithLabelValues(e.Schedule, string(e.Reason)).Add(float64(e.Runs))
	case schedule.AlarmRaised:
		m.AlarmRaised(e.Schedule, string(e.Kind))
	}
}

// AlarmRaised counts an alarm of kind raised for schedule. On a nil
// *metrics (no listener) it does nothing. It is safe for concurrent use.
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
