package config

import (
	"encoding/json"
	"strings"
	"text/template"
	"time"

	"github.com/scheduler-run/scheduler/queue"
)

// Task is a [tasks.NAME] table: a job type and its policy. A task runs a
// command, calls a URL, or neither when a Go handler is registered under its
// name; the tasks package executes them.
type Task struct {
	// Name is the table's NAME, the job type of its jobs.
	Name string
	// Command is the program and its arguments (key command), each a
	// text/template over the job's payload. A program named by a relative
	// path (./bin/report.sh) is made absolute from the file's directory.
	Command []string
	// Env is added to a command's environment (key env).
	Env map[string]string
	// Dir is a command's working directory (key dir), made absolute from
	// the file's directory; empty for the daemon's.
	Dir string
	// URL receives the job's payload (key url).
	URL string
	// Method is the URL's request method (key method). Empty selects the
	// handler's default, POST.
	Method string
	// Headers are added to each request to URL (key headers).
	Headers map[string]string
	// FollowRedirects lets requests to URL follow redirects (key
	// follow_redirects). Default: false, a 3xx response fails the job.
	FollowRedirects bool
	// Timeout bounds one attempt (key timeout). Zero means none; the
	// handler of a URL task then applies its own default, 1m.
	Timeout time.Duration
	// MaxAttempts is how often a job runs before it is dead (key
	// max_attempts). Default: 5.
	MaxAttempts int
	// Backoff is the delay before the first retry, doubling after, with
	// jitter (key backoff). Default: 30s.
	Backoff time.Duration
	// MaxBackoff caps the retry delay (key max_backoff). Default: 1h.
	MaxBackoff time.Duration
	// Concurrency is how many jobs of this task run at once (key
	// concurrency). Zero means no limit beyond the workers.
	Concurrency int
	// PermanentExitCodes are a command's exit codes (1-255) that mean "do
	// not retry" (key permanent_exit_codes).
	PermanentExitCodes []int
	// Priority orders ready jobs: higher runs first (key priority).
	// Default: 0.
	Priority int
	// KillGrace is how long a command's process group has between SIGTERM
	// and SIGKILL at a timeout or shutdown (key kill_grace). Default: 10s.
	KillGrace time.Duration
	// LogOutput logs the tail of a successful run's output at info level
	// (key log_output). Default: false; failed runs always log theirs.
	LogOutput bool
	// MemoryMax limits the private writable memory of each process of a
	// command, in bytes (key memory_max, such as "512MiB"); see
	// tasks.Limits. Zero: no limit.
	MemoryMax int64
	// CPUTimeMax limits the CPU time of each process of a command (key
	// cpu_time_max, whole seconds); see tasks.Limits. Zero: no limit.
	CPUTimeMax time.Duration
	// OpenFilesMax limits the file descriptors each process of a command
	// may hold (key open_files_max); see tasks.Limits. Zero: the daemon's
	// own limit.
	OpenFilesMax int
	// RetryOverLimit makes an attempt that exceeded MemoryMax or
	// CPUTimeMax an ordinary failed attempt, retried, instead of failing the
	// job permanently (key retry_over_limit). Default: false.
	RetryOverLimit bool
	// GiveUpAfter is the total budget of each job, from its instant or, for
	// a job of no instant, its enqueue, or from an operator's later retry
	// (key give_up_after); see queue.TypeConfig.GiveUpAfter. Zero: none.
	GiveUpAfter time.Duration
	// Redact names the payload fields shown as "[redacted]" wherever a job
	// is shown to a person (key redact): a top-level key ("token"), or a
	// key nested in objects, with dots ("card.number"), crossing arrays.
	// The command or URL still receives the real values. See Redactor.
	Redact []string
	// RedactOutput are regular expressions (RE2 syntax) whose matches in
	// an attempt's output and error are replaced with "[redacted]" before
	// they are stored or logged (key redact_output). See Redactor.
	RedactOutput []string
	// Version is the version of the payload format of the jobs this
	// process enqueues for the task (key version), at least 1: a worker
	// runs them only if it accepts that version. Default: 1.
	Version int
	// Accepts are the payload versions of the task's jobs that this
	// process's worker runs (key accepts), each at least 1, none twice; a
	// job of another version stays pending for a worker that accepts it.
	// Default: [Version].
	Accepts []int

	// Rate and RatePer limit how often the task's jobs start, across every
	// process and node on the database: Rate starts per RatePer (key rate,
	// "10/1m"). Zero Rate: no limit. See queue.Rate.
	Rate    int
	RatePer time.Duration
	// RateBurst is how many may start at once after a quiet spell (key
	// rate_burst). Default: 1.
	RateBurst int
	// RateKey, a text/template over the job's payload, gives a limit per
	// value (key rate_key, such as "{{.customer}}"). Empty: one limit for
	// the task.
	RateKey string

	redactor *Redactor          // of Redact and RedactOutput; nil: none
	rateKey  *template.Template // of RateKey; nil: none
	line     int                // of the [tasks.NAME] table; 0: unknown
}

// Redactor returns the masking of the task's secrets: nil, masking
// nothing, when it has no redact or redact_output.
func (t *Task) Redactor() *Redactor { return t.redactor }

// Line returns the line of the task's [tasks.NAME] table in its file, for
// the errors found once the file has loaded (a task no handler runs); 0
// when unknown. A task that only moved in the file has not changed.
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

// rate is the queue's rate limit of the task; zero when it has none.
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

// rateKeyOf executes a task's rate_key over a job's payload. A payload the
// key cannot be read from (not an object, or lacking a field the template
// reads) shares the limit of the empty key "".
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

// redactFunc is the queue's hook that masks an attempt's output and error
// before they are stored; nil when the task redacts nothing.
func (t *Task) redactFunc() func(j *queue.Job, s string) string {
	r := t.redactor
	if r == nil {
		return nil
	}
	return func(j *queue.Job, s string) string { return r.Attempt(j.Payload, s) }
}
