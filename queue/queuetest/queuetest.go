// Package queuetest helps a program's tests of its jobs: assert that a job
// was enqueued, on a queue.Client or inside the program's own transaction
// (RequireEnqueued, RequireEnqueuedSQLiteTx, RequireEnqueuedPostgresTx), and
// run a handler on a job as a Pool would, on a clock.Fake and without a
// database, to see its outcome (done, retry and when, dead) and output
// (Work).
//
//	queuetest.RequireEnqueued(t, q, queuetest.Want{Type: "receipt", Payload: map[string]any{"order": 42}})
//	res := queuetest.Work(t, handler, queuetest.Claimed(t, Receipt{Order: 42}, queue.NewJob{}), queuetest.Config{})
//	// res.Outcome, res.RetryIn, res.Output, res.Err
//
// The helpers take a TB, which *testing.T has; the examples pass a stand-in,
// as they have no test. ExampleWork runs a typed handler's attempts to
// done, retry and dead; ExampleRequireEnqueued asserts a job in the
// program's SQLite transaction and after its commit, and its PostgreSQL
// twin the same in a pgx transaction. Package
// schedule/scheduletest runs a schedules.toml's beat the same way.
package queuetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/scheduler-run/scheduler/queue"
)

// TB is the part of testing.TB the helpers use; *testing.T and *testing.B
// have it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Want describes the jobs that match. Zero fields match any job.
type Want struct {
	Type     string
	Key      string
	Schedule string
	Item     string
	State    queue.State
	// Payload matches a job whose payload holds every field of Payload's
	// JSON with an equal value: a struct or map (marshalled), or a
	// json.RawMessage. Objects compare field by field, recursively; other
	// values whole. Nil matches any payload.
	Payload any
}

// RequireEnqueued fails t unless q holds a job that want matches, and
// returns the newest such job. The failure lists the jobs enqueued of
// want's type, to show what was there instead.
func RequireEnqueued(t TB, q *queue.Client, want Want) *queue.Job {
	t.Helper()
	jobs := Jobs(t, q, want)
	if len(jobs) == 0 {
		t.Fatalf("no job enqueued matching %s%s", want, candidates(t, q, want))
	}
	return jobs[len(jobs)-1]
}

// RequireNotEnqueued fails t if q holds a job that want matches.
func RequireNotEnqueued(t TB, q *queue.Client, want Want) {
	t.Helper()
	if jobs := Jobs(t, q, want); len(jobs) > 0 {
		t.Fatalf("%d jobs enqueued matching %s, want none; the newest: %s", len(jobs), want, describe(jobs[len(jobs)-1]))
	}
}

// Jobs returns the jobs of q that want matches, oldest first.
func Jobs(t TB, q *queue.Client, want Want) []*queue.Job {
	t.Helper()
	m := matcher(t, want)
	ctx := context.Background()
	if want.Key != "" {
		j, err := q.JobByKey(ctx, want.Key)
		switch {
		case errors.Is(err, queue.ErrNotFound):
			return nil
		case err != nil:
			t.Fatalf("read job %q: %v", want.Key, err)
		case m(j):
			return []*queue.Job{j}
		}
		return nil
	}
	var jobs []*queue.Job
	f := queue.Filter{Type: want.Type, Schedule: want.Schedule, State: want.State, Limit: queue.MaxList}
	for {
		page, err := q.List(ctx, f)
		if err != nil {
			t.Fatalf("list jobs: %v", err)
		}
		for _, j := range page {
			if m(j) {
				jobs = append(jobs, j)
			}
		}
		if len(page) < f.Limit {
			break
		}
		f.BeforeID = page[len(page)-1].ID
	}
	reverse(jobs)
	return jobs
}

func reverse(jobs []*queue.Job) {
	for i, j := 0, len(jobs)-1; i < j; i, j = i+1, j-1 {
		jobs[i], jobs[j] = jobs[j], jobs[i]
	}
}

// candidates describes up to 10 newest jobs of want's type, for a failure.
func candidates(t TB, q *queue.Client, want Want) string {
	t.Helper()
	jobs, err := q.List(context.Background(), queue.Filter{Type: want.Type, Limit: 10})
	if err != nil {
		return fmt.Sprintf("; list jobs: %v", err)
	}
	return listed(jobs, want.Type)
}

func listed(jobs []*queue.Job, typ string) string {
	of := ""
	if typ != "" {
		of = fmt.Sprintf(" of type %q", typ)
	}
	if len(jobs) == 0 {
		return "; no jobs" + of + " enqueued"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; jobs%s enqueued, newest first:", of)
	for _, j := range jobs {
		b.WriteString("\n\t" + describe(j))
	}
	return b.String()
}

func describe(j *queue.Job) string {
	s := fmt.Sprintf("job %d type %q key %q state %s payload %s", j.ID, j.Type, j.Key, j.State, j.Payload)
	if j.Schedule != "" {
		s += fmt.Sprintf(" schedule %q item %q", j.Schedule, j.Item)
	}
	return s
}

// String describes w as a failure names it.
func (w Want) String() string {
	var parts []string
	add := func(name, v string) {
		if v != "" {
			parts = append(parts, fmt.Sprintf("%s %q", name, v))
		}
	}
	add("type", w.Type)
	add("key", w.Key)
	add("schedule", w.Schedule)
	add("item", w.Item)
	add("state", string(w.State))
	if w.Payload != nil {
		p, _ := payloadJSON(w.Payload)
		parts = append(parts, "payload "+string(p))
	}
	if len(parts) == 0 {
		return "any job"
	}
	return strings.Join(parts, ", ")
}

// matcher returns whether a job matches want; a Payload that does not
// marshal fails t.
func matcher(t TB, want Want) func(*queue.Job) bool {
	t.Helper()
	var wantPayload any
	if want.Payload != nil {
		p, err := payloadJSON(want.Payload)
		if err == nil {
			err = json.Unmarshal(p, &wantPayload)
		}
		if err != nil {
			t.Fatalf("want payload %#v: %v", want.Payload, err)
		}
	}
	return func(j *queue.Job) bool {
		switch {
		case want.Type != "" && j.Type != want.Type,
			want.Key != "" && j.Key != want.Key,
			want.Schedule != "" && j.Schedule != want.Schedule,
			want.Item != "" && j.Item != want.Item,
			want.State != "" && j.State != want.State:
			return false
		case want.Payload == nil:
			return true
		}
		var got any
		if err := json.Unmarshal(j.Payload, &got); err != nil {
			return false
		}
		return holds(got, wantPayload)
	}
}

func payloadJSON(p any) ([]byte, error) {
	switch p := p.(type) {
	case json.RawMessage:
		return bytes.TrimSpace(p), nil
	case []byte:
		return bytes.TrimSpace(p), nil
	}
	return json.Marshal(p)
}

// holds reports whether got holds want: every field of an object, with a
// value that holds want's; any other value equal.
func holds(got, want any) bool {
	wm, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(got, want)
	}
	gm, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range wm {
		gv, ok := gm[k]
		if !ok || !holds(gv, wv) {
			return false
		}
	}
	return true
}
