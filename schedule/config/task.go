package config

import (
	"encoding/json"
	"strings"
	"text/template"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// Task is a [tasks.NAME] table: a job type and its policy. A task runs a
// command, calls a URL, or neither when a Go handler is registered under
// its name.
type Task struct {
	// Name is the table's NAME, its jobs' type.
	Name string
	// Command is the program and its arguments (key command), each a
	// text/template over the payload. A relative program (./bin/report.sh)
	// is made absolute from the file's directory.
	Command []string
	// Env is added to a command's environment (key env).
	Env map[string]string
	// Dir is a command's working directory (key dir), made absolute from
	// the file's directory; empty for the daemon's.
	Dir string
	// URL receives the job's payload (key url).
	URL string
	// Method is the request method (key method). Default: POST.
	Method string
	// Headers are added to each request (key headers).
	Headers map[string]string
	// FollowRedirects lets requests follow redirects (key
	// follow_redirects). Default: false, a 3xx fails the job.
	FollowRedirects bool
	// Timeout bounds one attempt (key timeout). Zero: none, 1m for a URL.
	Timeout time.Duration
	// MaxAttempts is how often a job runs before it is dead (key
	// max_attempts). Default: 5.
	MaxAttempts int
	// Backoff is the first retry's delay, doubling after, with jitter
	// (key backoff). Default: 30s.
	Backoff time.Duration
	// MaxBackoff caps the retry delay (key max_backoff). Default: 1h.
	MaxBackoff time.Duration
	// Concurrency is how many of the task's jobs run at once (key
	// concurrency). Zero: no limit beyond the workers.
	Concurrency int
	// PermanentExitCodes are exit codes (1-255) that mean "do not retry"
	// (key permanent_exit_codes).
	PermanentExitCodes []int
	// Priority orders ready jobs, higher first (key priority). Default: 0.
	Priority int
	// KillGrace is a command's time between SIGTERM and SIGKILL at a
	// timeout or shutdown (key kill_grace). Default: 10s.
	KillGrace time.Duration
	// LogOutput logs a successful run's output tail at info (key
	// log_output). Failed runs always log theirs.
	LogOutput bool
	// MemoryMax limits each command process's private writable memory,
	// in bytes (key memory_max, "512MiB"); see tasks.Limits. Zero: none.
	MemoryMax int64
	// CPUTimeMax limits each command process's CPU time (key
	// cpu_time_max, whole seconds). Zero: none.
	CPUTimeMax time.Duration
	// OpenFilesMax limits each command process's file descriptors (key
	// open_files_max). Zero: the daemon's own limit.
	OpenFilesMax int
	// RetryOverLimit retries an attempt over MemoryMax or CPUTimeMax
	// instead of failing the job permanently (key retry_over_limit).
	RetryOverLimit bool
	// GiveUpAfter is each job's total budget (key give_up_after); see
	// queue.TypeConfig.GiveUpAfter. Zero: none.
	GiveUpAfter time.Duration
	// Redact names payload fields shown as "[redacted]" to people (key
	// redact): "token", or dotted through objects and arrays
	// ("card.number"). The command or URL gets the real values.
	Redact []string
	// RedactOutput are RE2 expressions whose matches in an attempt's
	// output and error become "[redacted]" before they are stored or
	// logged (key redact_output).
	RedactOutput []string
	// Version is the payload format version of the jobs this process
	// enqueues (key version, at least 1). Default: 1.
	Version int
	// Accepts are the payload versions this process's worker runs (key
	// accepts, each at least 1, none twice); other jobs stay pending for
	// a worker that accepts them. Default: [Version].
	Accepts []int

	// Rate starts per RatePer limit the task across every node (key rate,
	// "10/1m"). Zero Rate: no limit. See queue.Rate.
	Rate    int
	RatePer time.Duration
	// RateBurst is how many may start at once after a quiet spell (key
	// rate_burst). Default: 1.
	RateBurst int
	// RateKey, a text/template over the payload, gives a limit per value
	// (key rate_key, "{{.customer}}"). Empty: one limit.
	RateKey string

	redactor *Redactor          // of Redact and RedactOutput; nil: none
	rateKey  *template.Template // of RateKey; nil: none
	line     int                // of the [tasks.NAME] table; 0: unknown
}

// Redactor returns the masking of the task's secrets; nil masks nothing.
func (t *Task) Redactor() *Redactor { return t.redactor }

// Line returns the line of the task's table, for errors found after
// loading; 0 when unknown. A task that only moved has not changed.
func (t *Task) Line() int { return t.line }

// TypeConfig returns the queue policy of the task's job type.
func (t *Task) TypeConfig() queue.TypeConfig {
	return queue.TypeConfig{
		Timeout:     t.Timeout,
		Concurrency: t.Concurrency,
		Backoff:     t.Backoff,
		MaxBackoff:  t.MaxBackoff,
		LogOutput:   t.LogOutput,
		GiveUpAfter: t.GiveUpAfter,
		RedactFunc:  t.redactFunc(),
		Accepts:     t.Accepts,
		Rate:        t.rate(),
	}
}

// rate is the task's queue.Rate; zero when none.
func (t *Task) rate() queue.Rate {
	if t.Rate == 0 {
		return queue.Rate{}
	}
	r := queue.Rate{Starts: t.Rate, Per: t.RatePer, Burst: t.RateBurst}
	if tmpl := t.rateKey; tmpl != nil {
		r.Key = func(payload json.RawMessage) string {
			k, _ := rateKeyOf(tmpl, payload)
			return k
		}
	}
	return r
}

// rateKeyOf executes rate_key over a payload. A payload it cannot read
// shares the limit of the key "".
func rateKeyOf(tmpl *template.Template, payload json.RawMessage) (string, error) {
	data, err := DecodeObject(payload)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// redactFunc masks an attempt's output and error before they are stored;
// nil when the task redacts nothing.
func (t *Task) redactFunc() func(j *queue.Job, s string) string {
	r := t.redactor
	if r == nil {
		return nil
	}
	return func(j *queue.Job, s string) string { return r.Attempt(j.Payload, s) }
}
