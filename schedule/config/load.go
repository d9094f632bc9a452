package config

import (
	"strings"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"
)

const maxNameLen = 128

// validName reports whether s may name a task or a schedule. A name never
// holds "|", the dedup key's separator.
func validName(s string) bool {
	if s == "" || len(s) > maxNameLen {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !isBareKeyChar(c) && !strings.ContainsRune(".:@/", rune(c)) {
			return false
		}
	}
	return true
}

const nameRule = "use 1 to 128 letters, digits and -_.:@/"

// load decodes and validates the file, tasks before the schedules and
// pools that name them. The Config is valid only if l.errs is empty.
func (l *loader) load() *Config {
	raw, ok := l.decodeFile()
	if !ok {
		return nil
	}
	return l.loadTables(raw, func(cfg *Config, templates map[string][]*template.Template) {
		l.loadSchedules(l.table(raw.Schedule, "schedule"), cfg, templates)
	})
}

// loadTables loads the tables of raw; schedules loads the [[schedule]]
// tables, once the tasks they name are loaded.
func (l *loader) loadTables(raw rawFile, schedules func(*Config, map[string][]*template.Template)) *Config {
	cfg := &Config{File: l.file, Tasks: map[string]*Task{}, byName: map[string]*Schedule{}}
	l.findTwins()
	l.loadScheduler(l.table(raw.Scheduler, "scheduler"), &cfg.Scheduler)
	templates := l.loadTasks(l.table(raw.Tasks, "tasks"), cfg)
	l.checkNotify(cfg.Scheduler.Notify, cfg, where{table: "scheduler", field: "notify", path: []string{"scheduler", "notify"}})
	l.checkNotifyTemplates(cfg.Scheduler.Notify, cfg, templates)
	schedules(cfg, templates)
	l.loadHTTP(l.table(raw.HTTP, "http"), cfg)
	l.loadAPI(l.table(raw.API, "api"), cfg)
	l.loadPools(l.table(raw.Pools, "pools"), cfg)
	l.loadTracing(l.table(raw.Tracing, "tracing"), cfg)
	l.checkKeys()
	return cfg
}

// table returns top-level table p, or nothing when it has twins.
func (l *loader) table(p toml.Primitive, name string) toml.Primitive {
	if l.twins[pathKey([]string{name})] {
		l.failed[pathKey([]string{name})] = true // its keys are not unknown
		return toml.Primitive{}
	}
	return p
}

// durationField decodes a duration of at least min into dst.
func (l *loader) durationField(p toml.Primitive, dst *time.Duration, w where, min time.Duration) {
	var d duration
	if !l.decode(p, &d, w) {
		return
	}
	if time.Duration(d) < min {
		if min == time.Nanosecond {
			l.errorf(w, "duration must be positive")
		} else {
			l.errorf(w, "duration %s is shorter than %s", time.Duration(d), min)
		}
		return
	}
	*dst = time.Duration(d)
}

func (l *loader) loadScheduler(p toml.Primitive, s *Scheduler) {
	*s = Scheduler{
		DB:               DefaultDB,
		Timezone:         time.UTC,
		RetainDone:       DefaultRetainDone,
		MaintenanceEvery: DefaultMaintenanceEvery,
		ShutdownGrace:    DefaultShutdownGrace,
		MisfireGrace:     DefaultMisfireGrace,
		Lease:            DefaultLease,
	}
	w := where{table: "scheduler", path: []string{"scheduler"}}
	var raw rawScheduler
	if !l.decode(p, &raw, w) {
		return
	}
	var db string
	if l.decode(raw.DB, &db, w.with("db")) {
		if db == "" {
			l.errorf(w.with("db"), "empty database path")
		} else {
			s.DB = db
		}
	}
	var workers int
	if l.decode(raw.Workers, &workers, w.with("workers")) {
		if workers < 0 || workers > MaxWorkers {
			l.errorf(w.with("workers"), "%d workers: want 0 (the default) to %d", workers, MaxWorkers)
		} else {
			s.Workers = workers
		}
	}
	var tz zone
	if l.decode(raw.Timezone, &tz, w.with("timezone")) {
		s.Timezone = tz.loc
	}
	l.durationField(raw.RetainDone, &s.RetainDone, w.with("retain_done"), time.Nanosecond)
	l.durationField(raw.MaintenanceEvery, &s.MaintenanceEvery, w.with("maintenance_every"), time.Nanosecond)
	l.durationField(raw.ShutdownGrace, &s.ShutdownGrace, w.with("shutdown_grace"), time.Nanosecond)
	l.durationField(raw.MisfireGrace, &s.MisfireGrace, w.with("misfire_grace"), time.Second)
	l.durationField(raw.Lease, &s.Lease, w.with("lease"), time.Second)
	l.durationField(raw.StartWithin, &s.StartWithin, w.with("start_within"), time.Nanosecond)
	l.durationField(raw.Deadline, &s.Deadline, w.with("deadline"), time.Nanosecond)
	l.decode(raw.Notify, &s.Notify, w.with("notify"))
	l.renotifyField(raw.Renotify, &s.Renotify, w.with("renotify"))
	if s.StartWithin > 0 && s.Deadline > 0 && s.StartWithin >= s.Deadline {
		l.errorf(w.with("start_within"), "start_within %s is not shorter than deadline %s", s.StartWithin, s.Deadline)
	}
}
