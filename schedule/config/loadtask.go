package config

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/scheduler-run/scheduler/internal/redact"
)

// loadTasks decodes the [tasks.NAME] tables into cfg.Tasks and returns
// the command tasks' argument templates that parse.
func (l *loader) loadTasks(p toml.Primitive, cfg *Config) map[string][]*template.Template {
	templates := map[string][]*template.Template{}
	var raws map[string]toml.Primitive
	if !l.decode(p, &raws, where{field: "tasks", path: []string{"tasks"}}) {
		return templates
	}
	for _, name := range slices.Sorted(maps.Keys(raws)) {
		w := where{table: "task", job: name, path: []string{"tasks", name}}
		t := &Task{Name: name, line: l.line(w.path...), MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff,
			MaxBackoff: DefaultMaxBackoff, KillGrace: DefaultKillGrace}
		// A task that fails to decode is still defined, so schedules
		// naming it add no misleading errors.
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

// loadTask decodes a [tasks.NAME] table into t and returns its command's
// templates and whether they parse.
func (l *loader) loadTask(t *Task, raw rawTask, w where) ([]*template.Template, bool) {
	l.checkTaskKind(raw, w)
	tmpls, tmplsOK := l.loadCommand(t, raw, w)
	l.loadURL(t, raw, w)
	l.loadRetries(t, raw, w)
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

// checkTaskKind reports a task with both command and url, and keys of
// one kind given to the other.
func (l *loader) checkTaskKind(raw rawTask, w where) {
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
}

// loadCommand decodes command, env and dir; see loadTask.
func (l *loader) loadCommand(t *Task, raw rawTask, w where) ([]*template.Template, bool) {
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
	if l.decode(raw.Dir, &t.Dir, w.with("dir")) && t.Dir != "" && !filepath.IsAbs(t.Dir) {
		t.Dir = filepath.Join(l.dir(), t.Dir)
	}
	if len(t.Command) > 0 {
		t.Command[0] = l.program(t.Command[0])
	}
	return tmpls, tmplsOK
}

// program resolves a relative program path (bin/report.sh) from the
// file's directory, so the config works from any working directory. A
// bare name is left for PATH; an absolute or templated start is kept.
func (l *loader) program(p string) string {
	literal, _, template := strings.Cut(p, "{{")
	if !strings.Contains(literal, "/") || filepath.IsAbs(literal) {
		return p
	}
	if template {
		// Joined without cleaning: a template's text stays as written.
		return l.dir() + string(filepath.Separator) + p
	}
	return filepath.Join(l.dir(), p)
}

// dir is the file's directory, absolute if possible.
func (l *loader) dir() string {
	dir := filepath.Dir(l.file)
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

func (l *loader) loadURL(t *Task, raw rawTask, w where) {
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
}

func (l *loader) loadRetries(t *Task, raw rawTask, w where) {
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
}

// loadVersions decodes version and accepts, which may differ: in a
// rolling upgrade a process may enqueue version 2 yet run only 1.
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

// loadRedact decodes redact and redact_output into the task's Redactor.
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

// Bounds of a command's resource limits.
const (
	// MinMemoryMax is the smallest memory_max: no program fits below.
	MinMemoryMax = 1 << 20
	// MinOpenFilesMax is the smallest open_files_max: stdio takes three.
	MinOpenFilesMax = 4
	// MaxOpenFilesMax is the largest open_files_max: Linux's fs.nr_open.
	MaxOpenFilesMax = 1 << 20
)

// loadLimits decodes memory_max, cpu_time_max (whole seconds, as
// RLIMIT_CPU), open_files_max and retry_over_limit.
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

// commandTemplates parses a command's arguments as the handler does.
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

// checkURL checks a url. Its errors mask it: query values may be secrets.
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

// isToken reports whether s is an HTTP token (RFC 9110).
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
