package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/scheduler-run/scheduler/schedule/cron"
	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// loadSchedules decodes the [[schedule]] tables into cfg.Schedules, in
// file order. templates are the command tasks' argument templates, which
// the payloads must fill.
func (l *loader) loadSchedules(p toml.Primitive, cfg *Config, templates map[string][]*template.Template) {
	var raws []toml.Primitive
	if !l.decode(p, &raws, where{field: "schedule", path: []string{"schedule"}}) {
		return
	}
	var sl scheduleList
	l.loadScheduleRange(raws, 0, cfg, templates, &sl)
	l.linkDownstream(cfg, sl.downstream)
}

// scheduleList is what loading the [[schedule]] tables gathers across
// the ranges they load in.
type scheduleList struct {
	names      map[string]int // the position of each name
	downstream []downstreamAt
}

// loadScheduleRange loads raws, the [[schedule]] tables from position
// base on, into cfg.Schedules.
func (l *loader) loadScheduleRange(raws []toml.Primitive, base int, cfg *Config, templates map[string][]*template.Template, sl *scheduleList) {
	// Names first, so any message can name its schedule.
	decoded := make([]rawSchedule, len(raws))
	ok := make([]bool, len(raws))
	for j, rp := range raws {
		i := base + j
		w := where{table: "schedule", job: fmt.Sprintf("#%d", i+1), path: []string{"schedule", elem(i)}}
		if ok[j] = l.decode(rp, &decoded[j], w); !ok[j] {
			continue
		}
		var name string
		if present(decoded[j].Name) && (len(l.twins) == 0 || !l.twins[pathKey([]string{"schedule", elem(i), "name"})]) &&
			l.md.PrimitiveDecode(decoded[j].Name, &name) == nil && validName(name) {
			l.names[i] = name
		}
	}
	if sl.names == nil {
		sl.names = map[string]int{}
	}
	for j := range raws {
		if !ok[j] {
			continue
		}
		i := base + j
		s := l.loadSchedule(i, decoded[j], cfg, templates)
		if s.Name == "" {
			continue
		}
		l.own(s)
		if first, dup := sl.names[s.Name]; dup {
			w := where{table: "schedule", job: s.Name, path: []string{"schedule", elem(i), "name"}, field: "name"}
			l.errorf(w, "schedule %q is already defined on line %d", s.Name, l.line("schedule", elem(first), "name"))
			continue
		}
		sl.names[s.Name] = i
		if s.After != "" {
			sl.downstream = append(sl.downstream, downstreamAt{s, i})
			continue
		}
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
	l.loadName(raw, s, w)
	if present(raw.After) || present(raw.Require) {
		l.loadAfter(raw, s, w)
	} else {
		l.loadCron(raw, s, cfg, w)
	}
	l.loadScheduleTask(raw, s, cfg, w)
	l.loadItems(raw, s, cfg, templates, w)
	l.loadCatchUp(raw, s, w)
	l.decode(raw.Overlap, &s.Overlap, w.with("overlap"))
	l.loadAlarms(raw, s, cfg, w)
	l.checkNotifyTemplates(s.Notify, cfg, templates)
	return s
}

// loadName decodes a schedule's name, which is required.
func (l *loader) loadName(raw rawSchedule, s *Schedule, w where) {
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
}

// loadCron decodes a schedule's cron, which is required, and timezone
// (see Schedule.Location), and adds cron.Expr.Warning to the warnings.
func (l *loader) loadCron(raw rawSchedule, s *Schedule, cfg *Config, w where) {
	var text cronText
	cronOK := false
	if !present(raw.Cron) {
		l.errorf(w.with("cron"), "missing")
	} else {
		cronOK = l.decode(raw.Cron, &text, w.with("cron"))
	}
	loc := cfg.Scheduler.Timezone
	var tz zone
	if l.decode(raw.Timezone, &tz, w.with("timezone")) {
		loc = tz.loc
		if cronOK && cron.HasZonePrefix(string(text)) {
			l.errorf(w.with("timezone"), "cron has a CRON_TZ= prefix: give the zone once")
		}
	}
	if !cronOK {
		return
	}
	expr, err := l.parseCron(l.intern(string(text)), loc)
	if err != nil {
		l.add(w.with("cron"), err)
		return
	}
	s.Cron, s.expr, s.Location = string(text), expr, expr.Location()
	if msg := expr.Warning(); msg != "" {
		cfg.Warnings = append(cfg.Warnings, l.warning(w.with("cron"), errors.New(msg)))
	}
}

// parseCron is cron.Parse, sharing one Expr between the schedules with
// the same expression and zone.
func (l *loader) parseCron(text string, loc *time.Location) (*cron.Expr, error) {
	k := exprKey{text, loc}
	if e, ok := l.exprs[k]; ok {
		return e, nil
	}
	e, err := cron.Parse(text, loc)
	if err == nil {
		l.exprs[k] = e
	}
	return e, err
}

// loadScheduleTask decodes a schedule's task, which is required and must
// be defined.
func (l *loader) loadScheduleTask(raw rawSchedule, s *Schedule, cfg *Config, w where) {
	switch {
	case !present(raw.Task):
		l.errorf(w.with("task"), "missing")
	case l.decode(raw.Task, &s.Task, w.with("task")):
		if _, ok := cfg.Tasks[s.Task]; !ok {
			l.undefinedTask(w.with("task"), s.Task, cfg)
		}
	}
}

// undefinedTask reports an undefined task, with the nearest names or how
// to define it.
func (l *loader) undefinedTask(w where, task string, cfg *Config) {
	if hint := suggest.Hint(task, slices.Sorted(maps.Keys(cfg.Tasks))); hint != "" {
		l.errorf(w, "task %q is not defined%s", task, hint)
	} else {
		l.errorf(w, "task %q is not defined: add a [tasks.%s] table", task, task)
	}
}

// loadItems decodes payload and for_each into Items, and checks that each
// payload fills the task's templates and rate_key and sets no redacted
// field. An item's problems are reported at for_each, else at payload.
// The decoded tables are dropped once encoded: a schedule keeps its
// payloads as JSON only, a fraction of the size of the Go maps.
func (l *loader) loadItems(raw rawSchedule, s *Schedule, cfg *Config, templates map[string][]*template.Template, w where) {
	var payload map[string]any
	var forEach []map[string]any
	payloadOK := !present(raw.Payload) || l.decode(raw.Payload, &payload, w.with("payload"))
	forEachOK := !present(raw.ForEach) || l.decode(raw.ForEach, &forEach, w.with("for_each"))
	if present(raw.ForEach) && forEachOK && len(forEach) == 0 {
		l.errorf(w.with("for_each"), "empty: leave for_each out for a single run per instant")
		forEachOK = false
	}
	itemsField := w.with("payload")
	if present(raw.ForEach) {
		itemsField = w.with("for_each")
	}
	t := cfg.Tasks[s.Task]
	if forEachOK && t != nil {
		l.checkRedactedItems(w.with("for_each"), forEach, t)
	}
	if !payloadOK || !forEachOK {
		return
	}
	items, err := buildItems(payload, forEach)
	if err == nil {
		err = s.setPayloads(present(raw.Payload), payload, forEach, items)
	}
	if err != nil {
		l.add(itemsField, err)
		return
	}
	s.items = items
	if tmpls, ok := templates[s.Task]; ok {
		l.checkTemplates(w, itemsField, s, t.Command, tmpls)
	}
	if t != nil {
		l.checkRateKey(w, itemsField, s, t)
	}
}

// setPayloads sets s.Payload, when given, and s.ForEach as JSON. Without
// for_each the one item's payload is the schedule's, and shared.
func (s *Schedule) setPayloads(given bool, payload map[string]any, forEach []map[string]any, items []Item) error {
	if len(forEach) == 0 {
		if given {
			s.Payload = items[0].Payload
		}
		return nil
	}
	var err error
	if given {
		if s.Payload, err = encodePayload(payload); err != nil {
			return err
		}
	}
	s.ForEach = make([]json.RawMessage, len(forEach))
	for i, e := range forEach {
		if s.ForEach[i], err = encodePayload(e); err != nil {
			return fmt.Errorf("item %d: %w", i+1, err)
		}
	}
	return nil
}

// loadCatchUp decodes catch_up and catch_up_limit, which only "all"
// takes.
func (l *loader) loadCatchUp(raw rawSchedule, s *Schedule, w where) {
	l.decode(raw.CatchUp, &s.CatchUp, w.with("catch_up"))
	if !l.decode(raw.CatchUpLimit, &s.CatchUpLimit, w.with("catch_up_limit")) {
		return
	}
	switch {
	case s.CatchUp != cron.CatchUpAll:
		l.errorf(w.with("catch_up_limit"), "applies only to catch_up = \"all\"")
	case s.CatchUpLimit < 1 || s.CatchUpLimit > MaxCatchUpLimit:
		l.errorf(w.with("catch_up_limit"), "%d: want 1 to %d", s.CatchUpLimit, MaxCatchUpLimit)
	}
}

// loadAlarms decodes start_within, deadline and notify, defaulting to
// [scheduler]'s. A start_within not shorter than the deadline is an error:
// the late alarm would add nothing.
func (l *loader) loadAlarms(raw rawSchedule, s *Schedule, cfg *Config, w where) {
	s.StartWithin, s.Deadline = cfg.Scheduler.StartWithin, cfg.Scheduler.Deadline
	s.Notify, s.Renotify = cfg.Scheduler.Notify, cfg.Scheduler.Renotify
	l.renotifyField(raw.Renotify, &s.Renotify, w.with("renotify"))
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
	if present(raw.Notify) {
		var notify []string
		if l.decode(raw.Notify, &notify, w.with("notify")) {
			s.Notify = notify
			l.checkNotify(notify, cfg, w.with("notify"))
		}
	}
	if present(raw.Renotify) && s.Renotify > 0 && len(s.Notify) == 0 {
		l.errorf(w.with("renotify"), "the schedule notifies no task: give it notify tasks, or drop renotify")
	}
}

// MinRenotify is the shortest renotify.
const MinRenotify = time.Second

// renotifyField decodes a renotify: zero turns reminders off, else at
// least MinRenotify.
func (l *loader) renotifyField(p toml.Primitive, dst *time.Duration, w where) {
	var d duration
	if !l.decode(p, &d, w) {
		return
	}
	if d != 0 && time.Duration(d) < MinRenotify {
		l.errorf(w, "duration %s is shorter than %s (\"0s\" turns reminders off)", time.Duration(d), MinRenotify)
		return
	}
	*dst = time.Duration(d)
}

// checkNotify reports notify tasks undefined or named twice.
func (l *loader) checkNotify(notify []string, cfg *Config, at where) {
	seen := map[string]bool{}
	for _, task := range notify {
		switch {
		case seen[task]:
			l.errorf(at, "task %q is named twice", task)
		case cfg.Tasks[task] == nil:
			l.undefinedTask(at, task, cfg)
		}
		seen[task] = true
	}
}

// checkRateKey runs t's rate_key over each item's payload, as claims
// will: a payload lacking a field would share the empty key's limit.
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

// checkRedactedItems rejects an item that sets a redacted field: the item
// ID, shown with every run, would expose it.
func (l *loader) checkRedactedItems(w where, forEach []map[string]any, t *Task) {
	for i, item := range forEach {
		for _, p := range t.Redact {
			top, _, _ := strings.Cut(p, ".")
			if _, ok := item[top]; ok {
				l.errorf(w, "item %d sets %q, which task %q redacts: an item's fields make its name, shown in every job key, log line and page; put the secret in payload instead", i+1, top, t.Name)
			}
		}
	}
}
