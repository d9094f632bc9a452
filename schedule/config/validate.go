package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"
	"golang.org/x/sys/unix"

	"github.com/scheduler-run/scheduler/internal/redact"
	"github.com/scheduler-run/scheduler/internal/tmplkey"
	"github.com/scheduler-run/scheduler/schedule/cron"
	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// maxNameLen bounds task and schedule names.
const maxNameLen = 128

// validName reports whether s may name a task or a schedule: letters,
// digits and "-_.:@/". A name never holds "|", which separates the parts of
// a dedup key.
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

func (l *loader) load() *Config {
	raw, ok := l.decodeFile()
	if !ok {
		return nil
	}
	cfg := &Config{File: l.file, Tasks: map[string]*Task{}, byName: map[string]*Schedule{}}
	l.findTwins()
	l.loadScheduler(l.table(raw.Scheduler, "scheduler"), &cfg.Scheduler)
	templates := l.loadTasks(l.table(raw.Tasks, "tasks"), cfg)
	l.checkNotify(cfg.Scheduler.Notify, cfg, where{table: "scheduler", field: "notify", path: []string{"scheduler", "notify"}})
	l.checkNotifyTemplates(cfg.Scheduler.Notify, cfg, templates)
	l.loadSchedules(l.table(raw.Schedule, "schedule"), cfg, templates)
	l.loadHTTP(l.table(raw.HTTP, "http"), cfg)
	l.loadPools(l.table(raw.Pools, "pools"), cfg)
	l.checkKeys()
	return cfg
}

// table returns the top-level table p of the file, or nothing when the
// file spells its name twice (see findTwins).
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
	if s.StartWithin > 0 && s.Deadline > 0 && s.StartWithin >= s.Deadline {
		l.errorf(w.with("start_within"), "start_within %s is not shorter than deadline %s", s.StartWithin, s.Deadline)
	}
}

// loadTasks decodes the [tasks.NAME] tables into cfg.Tasks and returns the
// parsed argument templates of the command tasks whose templates parse.
func (l *loader) loadTasks(p toml.Primitive, cfg *Config) map[string][]*template.Template {
	templates := map[string][]*template.Template{}
	var raws map[string]toml.Primitive
	if !l.decode(p, &raws, where{field: "tasks", path: []string{"tasks"}}) {
		return templates
	}
	for _, name := range slices.Sorted(maps.Keys(raws)) {
		w := where{table: "task", job: name, path: []string{"tasks", name}}
		t := &Task{Name: name, MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff, KillGrace: DefaultKillGrace}
		// A task that fails to decode still counts as defined, so that the
		// schedules naming it do not add misleading errors.
		cfg.Tasks[name] = t
		if !validName(name) {
			l.errorf(w, "task name %q: %s", name, nameRule)
		}
		var raw rawTask
		if !l.decode(raws[name], &raw, w) {
			continue
		}
		if tmpls, ok := l.loadTask(t, raw, w); ok {
			templates[name] = tmpls
		}
	}
	return templates
}

func (l *loader) loadTask(t *Task, raw rawTask, w where) ([]*template.Template, bool) {
	hasCommand, hasURL := present(raw.Command), present(raw.URL)
	if hasCommand && hasURL {
		l.errorf(w.with("url"), "a task has a command or a url, not both")
	}
	for _, f := range []struct {
		p       toml.Primitive
		key     string
		allowed bool
		kind    string
	}{
		{raw.Env, "env", hasCommand, "a command"},
		{raw.Dir, "dir", hasCommand, "a command"},
		{raw.PermanentExitCodes, "permanent_exit_codes", hasCommand, "a command"},
		{raw.MemoryMax, "memory_max", hasCommand, "a command"},
		{raw.CPUTimeMax, "cpu_time_max", hasCommand, "a command"},
		{raw.OpenFilesMax, "open_files_max", hasCommand, "a command"},
		{raw.RetryOverLimit, "retry_over_limit", hasCommand, "a command"},
		{raw.Method, "method", hasURL, "a url"},
		{raw.Headers, "headers", hasURL, "a url"},
		{raw.FollowRedirects, "follow_redirects", hasURL, "a url"},
	} {
		if present(f.p) && !f.allowed {
			l.errorf(w.with(f.key), "applies only to a task with %s", f.kind)
		}
	}

	var tmpls []*template.Template
	tmplsOK := false
	if l.decode(raw.Command, &t.Command, w.with("command")) {
		tmpls, tmplsOK = l.commandTemplates(t.Command, w.with("command"))
	}
	if l.decode(raw.Env, &t.Env, w.with("env")) {
		for _, k := range slices.Sorted(maps.Keys(t.Env)) {
			if err := checkEnv(k, t.Env[k]); err != nil {
				l.add(w.with("env"), err)
			}
		}
	}
	l.decode(raw.Dir, &t.Dir, w.with("dir"))
	if l.decode(raw.URL, &t.URL, w.with("url")) {
		if err := checkURL(t.URL); err != nil {
			l.add(w.with("url"), err)
		}
	}
	if l.decode(raw.Method, &t.Method, w.with("method")) && !isToken(t.Method) {
		l.errorf(w.with("method"), "%q is not an http method", t.Method)
	}
	if l.decode(raw.Headers, &t.Headers, w.with("headers")) {
		for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
			if !isToken(k) || strings.ContainsAny(t.Headers[k], "\r\n\x00") {
				l.errorf(w.with("headers"), "header %q: invalid name or value", k)
			}
		}
	}
	l.decode(raw.FollowRedirects, &t.FollowRedirects, w.with("follow_redirects"))
	l.durationField(raw.Timeout, &t.Timeout, w.with("timeout"), 0)
	l.durationField(raw.KillGrace, &t.KillGrace, w.with("kill_grace"), 0)
	if l.decode(raw.MaxAttempts, &t.MaxAttempts, w.with("max_attempts")) && t.MaxAttempts < 1 {
		l.errorf(w.with("max_attempts"), "%d attempts: want at least 1", t.MaxAttempts)
	}
	l.durationField(raw.Backoff, &t.Backoff, w.with("backoff"), time.Nanosecond)
	l.durationField(raw.MaxBackoff, &t.MaxBackoff, w.with("max_backoff"), time.Nanosecond)
	if t.MaxBackoff < t.Backoff {
		l.errorf(w.with("max_backoff"), "max_backoff %s is shorter than backoff %s", t.MaxBackoff, t.Backoff)
	}
	if l.decode(raw.Concurrency, &t.Concurrency, w.with("concurrency")) && t.Concurrency < 0 {
		l.errorf(w.with("concurrency"), "concurrency %d: want 0 (no limit) or more", t.Concurrency)
	}
	if l.decode(raw.PermanentExitCodes, &t.PermanentExitCodes, w.with("permanent_exit_codes")) {
		for _, c := range t.PermanentExitCodes {
			if c < 1 || c > 255 {
				l.errorf(w.with("permanent_exit_codes"), "exit code %d is not in 1-255", c)
			}
		}
	}
	l.decode(raw.Priority, &t.Priority, w.with("priority"))
	l.decode(raw.LogOutput, &t.LogOutput, w.with("log_output"))
	l.loadLimits(t, raw, w)
	l.durationField(raw.GiveUpAfter, &t.GiveUpAfter, w.with("give_up_after"), time.Nanosecond)
	l.loadRedact(t, raw, w)
	l.loadVersions(t, raw, w)
	l.loadRate(t, raw, w)
	return tmpls, tmplsOK
}

// loadVersions decodes version and accepts. A task may accept versions
// other than the one it enqueues: during a rolling upgrade, a process that
// already enqueues version 2 may still run version 1 alone, if other
// processes run version 2.
func (l *loader) loadVersions(t *Task, raw rawTask, w where) {
	t.Version = 1
	if l.decode(raw.Version, &t.Version, w.with("version")) && t.Version < 1 {
		l.errorf(w.with("version"), "version %d: want 1 or more", t.Version)
	}
	if !present(raw.Accepts) {
		t.Accepts = []int{t.Version}
		return
	}
	if !l.decode(raw.Accepts, &t.Accepts, w.with("accepts")) {
		return
	}
	if len(t.Accepts) == 0 {
		l.errorf(w.with("accepts"), "no version: list the payload versions this daemon runs, such as [1, 2]")
	}
	seen := map[int]bool{}
	for _, v := range t.Accepts {
		if v < 1 {
			l.errorf(w.with("accepts"), "version %d: want 1 or more", v)
		} else if seen[v] {
			l.errorf(w.with("accepts"), "version %d is listed twice", v)
		}
		seen[v] = true
	}
}

// loadRedact decodes redact and redact_output and builds the task's
// Redactor of them.
func (l *loader) loadRedact(t *Task, raw rawTask, w where) {
	if l.decode(raw.Redact, &t.Redact, w.with("redact")) {
		seen := map[string]bool{}
		for _, p := range t.Redact {
			if err := checkRedactPath(p); err != nil {
				l.add(w.with("redact"), err)
			} else if seen[p] {
				l.errorf(w.with("redact"), "field %q is listed twice", p)
			}
			seen[p] = true
		}
	}
	var patterns []*regexp.Regexp
	if l.decode(raw.RedactOutput, &t.RedactOutput, w.with("redact_output")) {
		for _, p := range t.RedactOutput {
			re, err := compileRedactPattern(p)
			if err != nil {
				l.add(w.with("redact_output"), err)
				continue
			}
			patterns = append(patterns, re)
		}
	}
	t.redactor = newRedactor(t.Redact, patterns)
}

// loadRate decodes rate, rate_burst and rate_key.
func (l *loader) loadRate(t *Task, raw rawTask, w where) {
	var r rate
	if l.decode(raw.Rate, &r, w.with("rate")) {
		t.Rate, t.RatePer = r.starts, r.per
	}
	if l.decode(raw.RateBurst, &t.RateBurst, w.with("rate_burst")) {
		switch {
		case t.RateBurst < 1:
			l.errorf(w.with("rate_burst"), "burst %d: want at least 1", t.RateBurst)
			t.RateBurst = 0
		case !present(raw.Rate):
			l.errorf(w.with("rate_burst"), "a burst without a rate: set rate too")
		}
	}
	if l.decode(raw.RateKey, &t.RateKey, w.with("rate_key")) {
		tmpl, err := template.New("rate_key").Option("missingkey=error").Parse(t.RateKey)
		switch {
		case err != nil:
			l.errorf(w.with("rate_key"), "%q: %w", t.RateKey, err)
		case !present(raw.Rate):
			l.errorf(w.with("rate_key"), "a key without a rate: set rate too")
		default:
			t.rateKey = tmpl
		}
	}
}

// checkRateKey runs the rate_key of task t over the payload of every item
// of schedule s, as claims will: an item whose payload lacks a field the
// key reads would share the limit of the empty key with every other such
// job, which is not what the key asks for.
func (l *loader) checkRateKey(w, items where, s *Schedule, t *Task) {
	if t.rateKey == nil {
		return
	}
	for n, it := range s.items {
		if _, err := rateKeyOf(t.rateKey, it.Payload); err != nil {
			at := where{table: "task", job: t.Name, field: "rate_key", path: []string{"tasks", t.Name, "rate_key"}}
			l.errorf(at, "%q over %s: %w", t.RateKey, l.whose(w, items, n, it), err)
			return
		}
	}
}

// checkRedactedItems rejects a for_each item that sets a field its task
// redacts: an item's keys and values make its ID, which is part of every
// job key and shown with every run, so the value could not be masked.
func (l *loader) checkRedactedItems(w where, s *Schedule, t *Task) {
	for i, item := range s.ForEach {
		for _, p := range t.Redact {
			top, _, _ := strings.Cut(p, ".")
			if _, ok := item[top]; ok {
				l.errorf(w, "item %d sets %q, which task %q redacts: an item's fields make its name, shown in every job key, log line and page; put the secret in payload instead", i+1, top, t.Name)
			}
		}
	}
}

// Bounds of a command's resource limits.
const (
	// MinMemoryMax is the smallest memory_max: below it not even a small
	// program's libraries fit, and every attempt would fail at its start.
	MinMemoryMax = 1 << 20
	// MinOpenFilesMax is the smallest open_files_max: the standard
	// streams take three descriptors.
	MinOpenFilesMax = 4
	// MaxOpenFilesMax is the largest open_files_max, Linux's default
	// fs.nr_open.
	MaxOpenFilesMax = 1 << 20
)

// loadLimits decodes a command's resource limits: memory_max, cpu_time_max
// (whole seconds, RLIMIT_CPU's unit), open_files_max and retry_over_limit.
func (l *loader) loadLimits(t *Task, raw rawTask, w where) {
	var mem size
	if l.decode(raw.MemoryMax, &mem, w.with("memory_max")) {
		if mem < MinMemoryMax {
			l.errorf(w.with("memory_max"), "%d bytes is less than the smallest memory_max, 1MiB", mem)
		} else {
			t.MemoryMax = int64(mem)
		}
	}
	var cpu time.Duration
	l.durationField(raw.CPUTimeMax, &cpu, w.with("cpu_time_max"), time.Second)
	if cpu%time.Second != 0 {
		l.errorf(w.with("cpu_time_max"), "%s is not a whole number of seconds, the unit of the limit", cpu)
	} else {
		t.CPUTimeMax = cpu
	}
	if l.decode(raw.OpenFilesMax, &t.OpenFilesMax, w.with("open_files_max")) &&
		(t.OpenFilesMax < MinOpenFilesMax || t.OpenFilesMax > MaxOpenFilesMax) {
		l.errorf(w.with("open_files_max"), "%d open files: want %d to %d (the standard streams take three)", t.OpenFilesMax, MinOpenFilesMax, MaxOpenFilesMax)
		t.OpenFilesMax = 0
	}
	l.decode(raw.RetryOverLimit, &t.RetryOverLimit, w.with("retry_over_limit"))
}

// commandTemplates parses a command's arguments as the command handler
// does: text/template, a missing key being an error.
func (l *loader) commandTemplates(argv []string, w where) ([]*template.Template, bool) {
	if len(argv) == 0 {
		l.errorf(w, "empty command")
		return nil, false
	}
	if argv[0] == "" {
		l.errorf(w, "empty program name")
		return nil, false
	}
	ok := true
	tmpls := make([]*template.Template, len(argv))
	for i, arg := range argv {
		t, err := template.New(fmt.Sprintf("argv[%d]", i)).Option("missingkey=error").Parse(arg)
		if err != nil {
			l.errorf(w, "argument %d %q: %w", i, arg, err)
			ok = false
			continue
		}
		tmpls[i] = t
	}
	return tmpls, ok
}

func checkEnv(k, v string) error {
	switch {
	case k == "":
		return errors.New("empty variable name")
	case strings.ContainsAny(k, "=\x00"):
		return fmt.Errorf("variable name %q contains '=' or NUL", k)
	case strings.HasPrefix(k, "SCHEDULER_"):
		return fmt.Errorf("variable %s: names starting with SCHEDULER_ are reserved", k)
	case strings.ContainsRune(v, 0):
		return fmt.Errorf("variable %s: value contains NUL", k)
	}
	return nil
}

// checkURL checks an http task's url. Its errors show the url masked
// (redact.URL): its query values may be secrets.
func checkURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		if ue, ok := errors.AsType[*url.Error](err); ok {
			ue.URL = redact.URL(ue.URL)
		}
		return fmt.Errorf("invalid url: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("url %s: scheme must be http or https", redact.URL(s))
	case u.Host == "":
		return fmt.Errorf("url %s: host is missing", redact.URL(s))
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110), as methods and
// header names are.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func (l *loader) loadSchedules(p toml.Primitive, cfg *Config, templates map[string][]*template.Template) {
	var raws []toml.Primitive
	if !l.decode(p, &raws, where{field: "schedule", path: []string{"schedule"}}) {
		return
	}
	// Names first, so that a message about any key can name its schedule.
	decoded := make([]rawSchedule, len(raws))
	ok := make([]bool, len(raws))
	for i, rp := range raws {
		w := where{table: "schedule", job: fmt.Sprintf("#%d", i+1), path: []string{"schedule", elem(i)}}
		if ok[i] = l.decode(rp, &decoded[i], w); !ok[i] {
			continue
		}
		var name string
		if present(decoded[i].Name) && !l.twins[pathKey([]string{"schedule", elem(i), "name"})] &&
			l.md.PrimitiveDecode(decoded[i].Name, &name) == nil && validName(name) {
			l.names[i] = name
		}
	}
	lines := map[string]int{}
	for i := range raws {
		if !ok[i] {
			continue
		}
		s := l.loadSchedule(i, decoded[i], cfg, templates)
		if s.Name == "" {
			continue
		}
		if line, dup := lines[s.Name]; dup {
			w := where{table: "schedule", job: s.Name, path: []string{"schedule", elem(i), "name"}, field: "name"}
			l.errorf(w, "schedule %q is already defined on line %d", s.Name, line)
			continue
		}
		lines[s.Name] = l.loc.line("schedule", elem(i), "name")
		cfg.Schedules = append(cfg.Schedules, s)
		cfg.byName[s.Name] = s
	}
}

func (l *loader) loadSchedule(i int, raw rawSchedule, cfg *Config, templates map[string][]*template.Template) *Schedule {
	job := l.names[i]
	if job == "" {
		job = fmt.Sprintf("#%d", i+1)
	}
	w := where{table: "schedule", job: job, path: []string{"schedule", elem(i)}}
	s := &Schedule{CatchUp: cron.CatchUpLatest, CatchUpLimit: DefaultCatchUpLimit, Overlap: OverlapAllow}

	var name string
	switch {
	case !present(raw.Name):
		l.errorf(w.with("name"), "missing")
	case l.decode(raw.Name, &name, w.with("name")):
		if !validName(name) {
			l.errorf(w.with("name"), "name %q: %s", name, nameRule)
		} else {
			s.Name = name
		}
	}

	var expr cronText
	cronOK := false
	if !present(raw.Cron) {
		l.errorf(w.with("cron"), "missing")
	} else {
		cronOK = l.decode(raw.Cron, &expr, w.with("cron"))
	}
	loc := cfg.Scheduler.Timezone
	var tz zone
	if l.decode(raw.Timezone, &tz, w.with("timezone")) {
		loc = tz.loc
		if cronOK && cron.HasZonePrefix(string(expr)) {
			l.errorf(w.with("timezone"), "cron has a CRON_TZ= prefix: give the zone once")
		}
	}
	if cronOK {
		spec, err := cron.Parse(string(expr), loc)
		if err != nil {
			l.add(w.with("cron"), err)
		} else {
			s.Cron, s.expr, s.Location = string(expr), spec, spec.Location()
			if msg := spec.Warning(); msg != "" {
				line := 0
				if l.loc != nil {
					line = l.loc.line(w.with("cron").path...)
				}
				cfg.Warnings = append(cfg.Warnings, &Error{File: l.file, Line: line,
					Table: w.table, Job: w.job, Field: "cron", Err: errors.New(msg)})
			}
		}
	}

	switch {
	case !present(raw.Task):
		l.errorf(w.with("task"), "missing")
	case l.decode(raw.Task, &s.Task, w.with("task")):
		if _, ok := cfg.Tasks[s.Task]; !ok {
			if hint := suggest.Hint(s.Task, slices.Sorted(maps.Keys(cfg.Tasks))); hint != "" {
				l.errorf(w.with("task"), "task %q is not defined%s", s.Task, hint)
			} else {
				l.errorf(w.with("task"), "task %q is not defined: add a [tasks.%s] table", s.Task, s.Task)
			}
		}
	}

	payloadOK := !present(raw.Payload) || l.decode(raw.Payload, &s.Payload, w.with("payload"))
	forEachOK := !present(raw.ForEach) || l.decode(raw.ForEach, &s.ForEach, w.with("for_each"))
	if present(raw.ForEach) && forEachOK && len(s.ForEach) == 0 {
		l.errorf(w.with("for_each"), "empty: leave for_each out for a single run per instant")
		forEachOK = false
	}
	itemsField := w.with("payload")
	if present(raw.ForEach) {
		itemsField = w.with("for_each")
	}
	if forEachOK {
		if t := cfg.Tasks[s.Task]; t != nil {
			l.checkRedactedItems(w.with("for_each"), s, t)
		}
	}
	if payloadOK && forEachOK {
		items, err := buildItems(s.Payload, s.ForEach)
		if err != nil {
			l.add(itemsField, err)
		} else {
			s.items = items
			if tmpls, ok := templates[s.Task]; ok {
				l.checkTemplates(w, itemsField, s, cfg.Tasks[s.Task].Command, tmpls)
			}
			if t := cfg.Tasks[s.Task]; t != nil {
				l.checkRateKey(w, itemsField, s, t)
			}
		}
	}

	l.decode(raw.CatchUp, &s.CatchUp, w.with("catch_up"))
	if l.decode(raw.CatchUpLimit, &s.CatchUpLimit, w.with("catch_up_limit")) {
		switch {
		case s.CatchUp != cron.CatchUpAll:
			l.errorf(w.with("catch_up_limit"), "applies only to catch_up = \"all\"")
		case s.CatchUpLimit < 1 || s.CatchUpLimit > MaxCatchUpLimit:
			l.errorf(w.with("catch_up_limit"), "%d: want 1 to %d", s.CatchUpLimit, MaxCatchUpLimit)
		}
	}
	l.decode(raw.Overlap, &s.Overlap, w.with("overlap"))
	l.loadAlarms(raw, s, cfg, w)
	l.checkNotifyTemplates(s.Notify, cfg, templates)
	return s
}

// loadAlarms decodes a schedule's start_within, deadline and notify, each
// defaulting to its [scheduler] key. A start_within not shorter than the
// deadline is an error: the missed alarm would always come first, and the
// late one say nothing more. Tasks named in notify, the schedule's or the
// default, must be defined.
func (l *loader) loadAlarms(raw rawSchedule, s *Schedule, cfg *Config, w where) {
	s.StartWithin, s.Deadline = cfg.Scheduler.StartWithin, cfg.Scheduler.Deadline
	s.Notify = cfg.Scheduler.Notify
	l.durationField(raw.StartWithin, &s.StartWithin, w.with("start_within"), time.Nanosecond)
	l.durationField(raw.Deadline, &s.Deadline, w.with("deadline"), time.Nanosecond)
	if s.StartWithin > 0 && s.Deadline > 0 && s.StartWithin >= s.Deadline &&
		(present(raw.StartWithin) || present(raw.Deadline)) {
		field := "start_within"
		if !present(raw.StartWithin) {
			field = "deadline"
		}
		l.errorf(w.with(field), "start_within %s is not shorter than deadline %s", s.StartWithin, s.Deadline)
	}
	if !present(raw.Notify) {
		return
	}
	var notify []string
	if l.decode(raw.Notify, &notify, w.with("notify")) {
		s.Notify = notify
		l.checkNotify(notify, cfg, w.with("notify"))
	}
}

// checkNotify reports the tasks of a notify key that are not defined or
// named twice.
func (l *loader) checkNotify(notify []string, cfg *Config, at where) {
	seen := map[string]bool{}
	for _, task := range notify {
		switch {
		case seen[task]:
			l.errorf(at, "task %q is named twice", task)
		case cfg.Tasks[task] == nil:
			if hint := suggest.Hint(task, slices.Sorted(maps.Keys(cfg.Tasks))); hint != "" {
				l.errorf(at, "task %q is not defined%s", task, hint)
			} else {
				l.errorf(at, "task %q is not defined: add a [tasks.%s] table", task, task)
			}
		}
		seen[task] = true
	}
}

// alarmPayloadSample is an alarm's payload with every key it may hold, as
// a notify task's templates read it.
var alarmPayloadSample = func() map[string]any {
	b, err := json.Marshal(AlarmPayload{Schedule: "nightly", Instant: "2026-03-01T03:00:00Z", Kind: "missed",
		Deadline: "2026-03-01T03:30:00Z", JobID: 1})
	if err != nil {
		panic(err)
	}
	m, err := DecodeObject(b)
	if err != nil {
		panic(err)
	}
	return m
}()

// checkNotifyTemplates runs the argument templates of each command task of
// notify over an alarm's payload, as the command handler will when it
// hands the task an alarm: a key the payload never has would fail every
// notification, so it is reported at the task's command, once per task.
func (l *loader) checkNotifyTemplates(notify []string, cfg *Config, templates map[string][]*template.Template) {
	for _, task := range notify {
		tmpls, ok := templates[task]
		if !ok || l.notified[task] || cfg.Tasks[task] == nil {
			continue
		}
		if l.notified == nil {
			l.notified = map[string]bool{}
		}
		l.notified[task] = true
		argv := cfg.Tasks[task].Command
		for i, t := range tmpls {
			if err := t.Execute(io.Discard, alarmPayloadSample); err != nil {
				at := where{table: "task", job: task, field: "command", path: []string{"tasks", task, "command"}}
				l.add(at, templateError("the payload of an alarm it is notified of", i, argv[i], t, alarmPayloadSample, err))
				break
			}
		}
	}
}

// checkTemplates runs a command task's argument templates over the payload
// of every item of s, as the command handler will. A failure is reported at
// the task's command, where the key is read, and names the schedule and the
// line of its payload or for_each (items), the item, the key and the keys
// the item has; the first failing item is described, the others counted.
func (l *loader) checkTemplates(w, items where, s *Schedule, argv []string, tmpls []*template.Template) {
	at := where{table: "task", job: s.Task, field: "command", path: []string{"tasks", s.Task, "command"}}
	var first error
	failed := 0
	for n, it := range s.items {
		data, err := DecodeObject(it.Payload)
		if err != nil {
			l.add(items, err)
			return
		}
		for i, t := range tmpls {
			err := t.Execute(io.Discard, data)
			if err == nil {
				continue
			}
			if failed++; first == nil {
				first = templateError(l.whose(w, items, n, it), i, argv[i], t, data, err)
			}
			break
		}
	}
	if first == nil {
		return
	}
	if failed > 1 {
		other := "1 other item fails too"
		if failed > 2 {
			other = fmt.Sprintf("%d other items fail too", failed-1)
		}
		first = fmt.Errorf("%w; %s", first, other)
	}
	l.add(at, first)
}

// whose names item n of schedule w for a message about its payload:
// `item 2 (client=globex) of schedule "a" (line 7)`, or `the payload of
// schedule "a" (line 7)` for a schedule without for_each.
func (l *loader) whose(w, items where, n int, it Item) string {
	var b strings.Builder
	if it.ID != "" {
		fmt.Fprintf(&b, "item %d (%s) of ", n+1, it.ID)
	} else {
		b.WriteString("the payload of ")
	}
	if strings.HasPrefix(w.job, "#") {
		fmt.Fprintf(&b, "schedule %s", w.job)
	} else {
		fmt.Fprintf(&b, "schedule %q", w.job)
	}
	if line := l.loc.line(items.path...); line > 0 {
		fmt.Fprintf(&b, " (line %d)", line)
	}
	return b.String()
}

// templateError describes the failure err of argument i, arg, executed over
// data: the key it reads that data lacks or holds as null, in the payload's
// words, or else the template's own error.
func templateError(whose string, i int, arg string, t *template.Template, data map[string]any, err error) error {
	kp := tmplkey.Find(t, data)
	if kp == nil {
		return fmt.Errorf("argument %d %q over %s: %w", i, arg, whose, err)
	}
	if kp.Null {
		return fmt.Errorf("argument %d %q: key %q of %s is null", i, arg, kp.Key(), whose)
	}
	last := kp.Path[len(kp.Path)-1]
	return fmt.Errorf("argument %d %q: %s has no key %q%s; %s", i, arg, whose, kp.Key(), suggest.Hint(last, kp.Have), kp.Holder())
}

// CommandEnv is where the daemon would run commands: what CheckCommands
// resolves a command's program against.
type CommandEnv struct {
	// Dir is the daemon's working directory, absolute. A task without dir
	// runs there, and a relative dir or program is taken from it.
	Dir string
	// Path is the daemon's PATH, searched for a program named without a
	// slash, as exec.LookPath searches it.
	Path string
}

// CheckCommands checks, for every command task of cfg, the program it would
// execute in env: a program that does not exist, is not a regular file or
// is not executable (by this process) is an error, since every job of the
// task would fail at its start. A program named by a path relative to the
// working directory, while that directory is not the config file's, is a
// warning: the config then works only from one directory, and the
// daemon's (under systemd, its WorkingDirectory=) may not be the one it
// was written for. A program that is a template is not checked.
//
// Unlike Load it reads the file system, so -check calls it and a reload does
// not. Lines are read again from cfg.File; they are 0 if it cannot be read.
func CheckCommands(cfg *Config, env CommandEnv) (errs, warnings Errors) {
	var loc *locator
	if data, err := os.ReadFile(cfg.File); err == nil {
		loc = locate(string(data))
	}
	configDir := ""
	if abs, err := filepath.Abs(filepath.Dir(cfg.File)); err == nil {
		configDir = abs
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Tasks)) {
		t := cfg.Tasks[name]
		if len(t.Command) == 0 || strings.Contains(t.Command[0], "{{") {
			continue
		}
		field, path := "command", []string{"tasks", name, "command"}
		dir := env.Dir
		if t.Dir != "" {
			dir = t.Dir
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(env.Dir, dir)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				field, path = "dir", []string{"tasks", name, "dir"}
			}
		}
		problem := func(list *Errors, err error) {
			line := 0
			if loc != nil {
				line = loc.line(path...)
			}
			*list = append(*list, &Error{File: cfg.File, Line: line, Table: "task", Job: name, Field: field, Err: err})
		}
		if field == "dir" {
			problem(&errs, fmt.Errorf("working directory %s does not exist or is not a directory", dir))
			continue
		}
		prog := t.Command[0]
		switch {
		case !strings.Contains(prog, "/"):
			if _, err := lookPath(prog, env.Path); err != nil {
				problem(&errs, err)
			}
		case filepath.IsAbs(prog):
			if err := executable(prog); err != nil {
				problem(&errs, fmt.Errorf("program %s: %w", prog, err))
			}
		default:
			full := filepath.Join(dir, prog)
			if err := executable(full); err != nil {
				problem(&errs, fmt.Errorf("program %s, relative to the working directory %s: %w; give an absolute path", prog, dir, err))
				continue
			}
			if t.Dir == "" && configDir != "" && configDir != filepath.Clean(env.Dir) {
				problem(&warnings, fmt.Errorf("program %s is found relative to the working directory %s, not to the config's directory %s; it breaks when the daemon runs elsewhere: give an absolute path", prog, env.Dir, configDir))
			}
		}
	}
	return errs, warnings
}

// lookPath finds prog in path as exec.LookPath does in $PATH: an empty
// element is the working directory (exec refuses such a result, and so
// does this).
func lookPath(prog, path string) (string, error) {
	var lastErr error
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		full := filepath.Join(dir, prog)
		err := executable(full)
		if err == nil {
			return full, nil
		}
		if !errors.Is(err, errNoFile) {
			lastErr = fmt.Errorf("program %s: %w", full, err)
		}
	}
	if lastErr != nil {
		return "", lastErr
	}
	return "", fmt.Errorf("program %q not found in PATH %q", prog, path)
}

// errNoFile is a program that is not there.
var errNoFile = errors.New("does not exist")

// executable returns nil if path is a regular file this process may
// execute.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errNoFile
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not executable (mode %s)", fi.Mode().Perm())
	}
	if err := unix.Access(path, unix.X_OK); err != nil {
		return fmt.Errorf("not executable by this user: %w", err)
	}
	return nil
}
