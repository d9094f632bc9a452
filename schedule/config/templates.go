package config

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/template"

	"github.com/scheduler-run/scheduler/internal/tmplkey"
	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// alarmPayloadSample is an alarm's payload with every key it may hold.
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

// checkNotifyTemplates runs each notify command task's templates over an
// alarm's payload: a key it never has would fail every notification. It
// reports at the task's command, once per task.
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

// checkTemplates runs a command task's templates over each item's payload,
// as the handler will. It reports at the task's command the first failure,
// naming schedule, items' line, item and key, and counts the others.
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

// whose names item n for a message: `item 2 (client=globex) of schedule
// "a" (line 7)`, or `the payload of schedule "a" (line 7)`.
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
	if line := l.line(items.path...); line > 0 {
		fmt.Fprintf(&b, " (line %d)", line)
	}
	return b.String()
}

// templateError describes argument i's failure over data: the key data
// lacks or holds as null, or else err.
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
