package daemon

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/scheduler-run/scheduler/clock"
	"github.com/scheduler-run/scheduler/queue"
	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/alarm"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// metricsCollector reads the database's gauges at each scrape, and the
// beat's view of the daemons' configs.
type metricsCollector struct {
	q     *queue.Client
	m     *metrics
	clock clock.Clock
	log   *slog.Logger

	mu  sync.Mutex
	cfg *config.Config
}

// setConfig makes the scrapes read the schedules and tasks of cfg.
func (c *metricsCollector) setConfig(cfg *config.Config) {
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
	descDeadlineState = prometheus.NewDesc("scheduler_schedule_deadline_state",
		"1 for a schedule's deadline state (on time, late, missed, recovered; the rule of -status and the dashboard), 0 for the others; absent when it watches no start_within or deadline.",
		[]string{labelSchedule, labelState}, nil)
	descPaused = prometheus.NewDesc("scheduler_schedule_paused",
		"1 while a schedule is paused, else 0.", []string{labelSchedule}, nil)
	descDatabaseUp = prometheus.NewDesc("scheduler_database_up",
		"1 when the scrape read the database, 0 when a read failed (the gauges read from it are then absent).", nil, nil)
	descDaemonsConfigs = prometheus.NewDesc("scheduler_daemons_configs",
		"Distinct configs the live daemons on the database run, as this daemon's beat last read their rows: 1 when they agree.", nil, nil)
	descIncidentsOpen = prometheus.NewDesc("scheduler_incidents_open",
		"Open incidents of a watched schedule, by kind (late, missed, dead, misfire): 1 from its first occurrence until a run succeeds, however many occur.", []string{labelSchedule, labelKind}, nil)
	descSilenced = prometheus.NewDesc("scheduler_schedule_silenced",
		"1 while scheduler -silence suppresses the schedule's notifications, else 0.", []string{labelSchedule}, nil)
	descMaterialising = prometheus.NewDesc("scheduler_beat_materialising",
		"1 while this daemon's beat materialises instants (its config is the newest among the live daemons'), 0 while it sits out.", nil, nil)
)

// Describe sends the collector's descriptions.
func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descOldestReady, descLastSuccess, descLastCompletion, descNextRun, descDeadline, descDeadlineState, descPaused, descDatabaseUp,
		descDaemonsConfigs, descMaterialising, descIncidentsOpen, descSilenced} {
		ch <- d
	}
}

// Collect reads the database and sends the gauges. A failed read leaves
// them out and sets scheduler_database_up to 0; the rest still serves.
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

// collect sends the database's gauges, or nothing when a read fails.
func (c *metricsCollector) collect(ctx context.Context, cfg *config.Config, ch chan<- prometheus.Metric) error {
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
	if err := c.collectIncidents(ctx, cfg, ch); err != nil {
		return err
	}
	deadlines, err := c.deadlineStates(ctx, cfg)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	collectJobs(cfg, st, ch)
	for _, s := range cfg.Schedules {
		f := fin[s.Name]
		ch <- prometheus.MustNewConstMetric(descLastSuccess, prometheus.GaugeValue, seconds(f.LastSuccess), s.Name)
		ch <- prometheus.MustNewConstMetric(descLastCompletion, prometheus.GaugeValue, seconds(f.LastCompletion), s.Name)
		cur, ok := cursors[s.Name]
		c.collectSchedule(s, cur, ok, now, ch)
		if state := deadlines[s.Name]; state != alarm.DeadlineNone {
			for _, st := range alarm.DeadlineStates {
				v := 0.0
				if st == state {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(descDeadlineState, prometheus.GaugeValue, v, s.Name, string(st))
			}
		}
	}
	return nil
}

// deadlineStates reads the deadline state of cfg's schedules that watch
// one, by alarm.ReadDeadline.
func (c *metricsCollector) deadlineStates(ctx context.Context, cfg *config.Config) (map[string]alarm.DeadlineState, error) {
	out := map[string]alarm.DeadlineState{}
	var last map[string]*queue.Job
	for _, s := range cfg.Schedules {
		if s.StartWithin == 0 && s.Deadline == 0 {
			continue
		}
		if last == nil {
			var err error
			if last, err = c.q.LastRuns(ctx); err != nil {
				return nil, err
			}
		}
		var lastRun time.Time
		if j := last[s.Name]; j != nil {
			lastRun = j.ScheduledAt
		}
		state, _, err := alarm.ReadDeadline(ctx, c.q, s, lastRun)
		if err != nil {
			return nil, err
		}
		out[s.Name] = state
	}
	return out, nil
}

// collectIncidents sends the open incidents of each watched schedule, with
// cron or after, by kind, 0 for none, and each schedule's silence.
func (c *metricsCollector) collectIncidents(ctx context.Context, cfg *config.Config, ch chan<- prometheus.Metric) error {
	open, err := c.q.OpenIncidents(ctx, store.MaxAlarmRows)
	if err != nil {
		return err
	}
	silences, err := c.q.Silences(ctx)
	if err != nil {
		return err
	}
	n := map[[2]string]int{}
	for _, in := range open {
		n[[2]string{in.Schedule, string(in.Kind)}]++
	}
	for _, s := range slices.Concat(cfg.Schedules, cfg.Followers()) {
		if s.Watched() {
			for _, k := range incidentKinds {
				ch <- prometheus.MustNewConstMetric(descIncidentsOpen, prometheus.GaugeValue, float64(n[[2]string{s.Name, k}]), s.Name, k)
			}
		}
		silenced := 0.0
		if _, ok := silences[s.Name]; ok {
			silenced = 1
		}
		ch <- prometheus.MustNewConstMetric(descSilenced, prometheus.GaugeValue, silenced, s.Name)
	}
	return nil
}

// collectJobs sends the jobs of every configured task and stored type by
// state, and each type's oldest ready job.
func collectJobs(cfg *config.Config, st queue.Stats, ch chan<- prometheus.Metric) {
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
}

// collectSchedule sends s's pause, next run and deadline gauges.
func (c *metricsCollector) collectSchedule(s *config.Schedule, cur store.Cursor, hasCursor bool, now time.Time, ch chan<- prometheus.Metric) {
	paused := 0.0
	if cur.Paused {
		paused = 1
	}
	ch <- prometheus.MustNewConstMetric(descPaused, prometheus.GaugeValue, paused, s.Name)
	if !cur.Paused {
		from := now
		if hasCursor && cur.At.After(from) {
			from = cur.At
		}
		if next := s.Next(from); !next.IsZero() {
			ch <- prometheus.MustNewConstMetric(descNextRun, prometheus.GaugeValue, seconds(next), s.Name)
		}
	}
	if df := c.m.DeadlineFunc; df != nil {
		if at, ok := df(s.Name); ok {
			ch <- prometheus.MustNewConstMetric(descDeadline, prometheus.GaugeValue, seconds(at), s.Name)
		}
	}
}

// seconds is t as Unix seconds, 0 for the zero time.
func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMilli()) / 1000
}
