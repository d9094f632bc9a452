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
