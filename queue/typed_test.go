package queue

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

type reportArgs struct {
	Customer string              `json:"customer"`
	Day      int                 `json:"day"`
	Window   struct{ Hours int } `json:"window"`
}

func (reportArgs) Kind() string { return "report" }

type pointerKind struct{ N int }

func (*pointerKind) Kind() string { return "pointer" }

type noKind struct{ N int }

// TestTypedRunsOnBothEngines: a typed handler registered by Register gets
// the payload EnqueueArgs marshalled, decoded, and its returned output is
// the attempt's, on each engine.
func TestTypedRunsOnBothEngines(t *testing.T) {
	t.Parallel()
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			q, _ := newEngineQueue(t, engine)
			p := newTestPool(t, q, PoolConfig{})
			got := make(chan reportArgs, 1)
			err := Register(p, "", func(ctx context.Context, j *TypedJob[reportArgs]) (string, error) {
				got <- j.Args
				return "sent to " + j.Args.Customer + " on attempt " + j.Key, nil
			}, TypeConfig{})
			if err != nil {
				t.Fatal(err)
			}
			runPool(t, p)
			want := reportArgs{Customer: "acme", Day: 3}
			res, err := q.EnqueueArgs(context.Background(), want, NewJob{Key: "r1"})
			if err != nil {
				t.Fatal(err)
			}
			if args := waitFor(t, got); args != want {
				t.Errorf("handler got %+v, want %+v", args, want)
			}
			eventually(t, "job done", func() bool { return mustJob(t, q, "r1").State == StateDone })
			as, err := q.Attempts(context.Background(), res.ID)
			if err != nil || len(as) != 1 || as[0].Output != "sent to acme on attempt r1" {
				t.Errorf("Attempts = %+v, %v; want one with the returned output", as, err)
			}
		})
	}
}

// TestTypedDecodeErrorIsPermanent: a payload that does not fit the
// arguments is a permanent failure naming the job type, the Go type and the
// field; the handler is not called.
func TestTypedDecodeErrorIsPermanent(t *testing.T) {
	t.Parallel()
	called := false
	h := WorkFunc[reportArgs](func(ctx context.Context, j *TypedJob[reportArgs]) (string, error) {
		called = true
		return "", nil
	})
	for _, c := range []struct {
		name, payload, want string
	}{
		{"wrong type", `{"customer":"acme","day":"monday"}`,
			`permanent: decode payload of job type "report" into queue.reportArgs: field "day": cannot use JSON string as int`},
		{"nested field", `{"window":{"Hours":"x"}}`,
			`permanent: decode payload of job type "report" into queue.reportArgs: field "window.Hours": cannot use JSON string as int`},
		{"not an object", `[1]`,
			`permanent: decode payload of job type "report" into queue.reportArgs: cannot use JSON array`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := h.Work(context.Background(), &Job{Type: "report", Payload: json.RawMessage(c.payload), Attempt: 1, MaxAttempts: 5})
			if err == nil || err.Error() != c.want {
				t.Errorf("Work(%s) = %v, want %s", c.payload, err, c.want)
			}
			if _, ok := errors.AsType[*ArgsError](err); !ok {
				t.Errorf("Work(%s) = %T, want an *ArgsError inside", c.payload, err)
			}
			if outcome, _ := decide(err, 1, 5, TypeConfig{}, nil); outcome != OutcomeDead {
				t.Errorf("fate of %v = %s, want dead", err, outcome)
			}
		})
	}
	if called {
		t.Error("handler called with an undecodable payload")
	}
}

// TestTypedEmptyPayloadAndOutput: an empty payload decodes as {}; an empty
// returned output keeps what the handler set with SetOutput.
func TestTypedEmptyPayloadAndOutput(t *testing.T) {
	t.Parallel()
	h := WorkFunc[reportArgs](func(ctx context.Context, j *TypedJob[reportArgs]) (string, error) {
		j.SetOutput([]byte("set"))
		return "", nil
	})
	j := &Job{Type: "report"}
	if err := h.Work(context.Background(), j); err != nil || string(j.Output()) != "set" {
		t.Errorf("Work = %v, output %q; want nil, set", err, j.Output())
	}
}

func TestMarshalArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		args     any
		typ      string
		want     string // type and payload, or the error
		wantFail bool
	}{
		{"kind", reportArgs{Customer: "a"}, "", `report {"customer":"a","day":0,"window":{"Hours":0}}`, false},
		{"same type given", reportArgs{}, "report", `report {"customer":"","day":0,"window":{"Hours":0}}`, false},
		{"pointer receiver", pointerKind{N: 1}, "", `pointer {"N":1}`, false},
		{"pointer args", &pointerKind{N: 2}, "", `pointer {"N":2}`, false},
		{"no kind given", noKind{N: 1}, "plain", `plain {"N":1}`, false},
		{"a map", map[string]int{"n": 1}, "plain", `plain {"n":1}`, false},
		{"no type", noKind{}, "", `marshal args: no job type: name one, or give queue.noKind a Kind method`, true},
		{"types differ", reportArgs{}, "other", `marshal args: job type "other" differs from queue.reportArgs's Kind "report"`, true},
		{"not marshallable", map[string]any{"f": func() {}}, "plain", `marshal args of job type "plain": json: unsupported type: func()`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			nj, err := MarshalArgs(c.args, NewJob{Type: c.typ, Key: "k"})
			got := nj.Type + " " + string(nj.Payload)
			if err != nil {
				got = err.Error()
			}
			if got != c.want || (err != nil) != c.wantFail {
				t.Errorf("MarshalArgs(%#v, %q) = %s, want %s", c.args, c.typ, got, c.want)
			}
			if err == nil && nj.Key != "k" {
				t.Errorf("MarshalArgs dropped the key: %+v", nj)
			}
		})
	}
}

// TestRegisterTypeErrors: Register refuses a missing type and a type that
// differs from the arguments' Kind, registering nothing.
func TestRegisterTypeErrors(t *testing.T) {
	t.Parallel()
	q, _ := newTestQueue(t)
	p := newTestPool(t, q, PoolConfig{})
	noop := func(ctx context.Context, j *TypedJob[noKind]) (string, error) { return "", nil }
	if err := Register(p, "", noop, TypeConfig{}); err == nil || !strings.Contains(err.Error(), "no job type") {
		t.Errorf("Register without a type = %v", err)
	}
	report := func(ctx context.Context, j *TypedJob[reportArgs]) (string, error) { return "", nil }
	if err := Register(p, "other", report, TypeConfig{}); err == nil || !strings.Contains(err.Error(), `differs from queue.reportArgs's Kind "report"`) {
		t.Errorf("Register with another type = %v", err)
	}
	if _, ok := p.lookup("other"); ok {
		t.Error("a refused Register registered its type")
	}
}

// TestRunAttemptFates: one attempt run without a pool ends as a pool's
// would: done with output, retry after the backoff, dead on the last
// attempt or a permanent error, redacted.
func TestRunAttemptFates(t *testing.T) {
	t.Parallel()
	fixed := func(n time.Duration) time.Duration { return n - 1 }
	fail := HandlerFunc(func(ctx context.Context, j *Job) error {
		j.SetOutput([]byte("token=s3cret"))
		return errors.New("refused token=s3cret")
	})
	redact := func(j *Job, s string) string { return strings.ReplaceAll(s, "s3cret", "***") }
	tc := TypeConfig{Backoff: 10 * time.Second, RedactFunc: redact}
	for _, c := range []struct {
		name    string
		h       Handler
		attempt int
		want    string
	}{
		{"done", HandlerFunc(func(ctx context.Context, j *Job) error { j.SetOutput([]byte("ok")); return nil }), 1, "done 0s ok <nil>"},
		{"first retry", fail, 1, "retry 10s token=*** refused token=***"},
		{"second retry", fail, 2, "retry 20s token=*** refused token=***"},
		{"last attempt", fail, 5, "dead 0s token=*** refused token=***"},
		{"permanent", HandlerFunc(func(ctx context.Context, j *Job) error { return Permanent(errors.New("bad")) }), 1, "dead 0s  permanent: bad"},
		{"retry after", HandlerFunc(func(ctx context.Context, j *Job) error { return RetryAfter(time.Minute, errors.New("busy")) }), 1, "retry 1m0s  retry after 1m0s: busy"},
		{"panic", HandlerFunc(func(ctx context.Context, j *Job) error { panic("boom") }), 1, "retry 10s  panic: boom"},
		{"unknown type", nil, 1, `dead 0s  permanent: unknown job type "t": no handler registered`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := &Job{Type: "t", Attempt: c.attempt, MaxAttempts: 5, CreatedAt: t0}
			r := RunAttempt(context.Background(), c.h, j, AttemptConfig{Type: tc, Clock: fakeAt(t0), Jitter: fixed})
			delay := time.Duration(0)
			if !r.RetryAt.IsZero() {
				delay = r.RetryAt.Sub(r.Finished)
			}
			errText := "<nil>"
			if r.Err != nil {
				errText, _, _ = strings.Cut(r.Err.Error(), "\n")
			}
			if got := strings.Join([]string{string(r.Outcome), delay.String(), r.Output, errText}, " "); got != c.want {
				t.Errorf("RunAttempt = %q, want %q", got, c.want)
			}
		})
	}
}

// TestRunAttemptGiveUp: past its budget a job is dead unrun; a retry that
// would start past it makes the attempt dead with a *GaveUpError.
func TestRunAttemptGiveUp(t *testing.T) {
	t.Parallel()
	ran := false
	h := HandlerFunc(func(ctx context.Context, j *Job) error { ran = true; return errors.New("down") })
	tc := TypeConfig{Backoff: time.Minute, GiveUpAfter: 30 * time.Second}
	j := &Job{Type: "t", Attempt: 1, MaxAttempts: 5, CreatedAt: t0}
	r := RunAttempt(context.Background(), h, j, AttemptConfig{Type: tc, Clock: fakeAt(t0.Add(time.Minute))})
	if _, ok := errors.AsType[*GaveUpError](r.Err); !ok || r.Outcome != OutcomeDead || ran {
		t.Errorf("past the budget: %+v, ran %v; want dead unrun", r, ran)
	}
	r = RunAttempt(context.Background(), h, j, AttemptConfig{Type: tc, Clock: fakeAt(t0)})
	if ge, ok := errors.AsType[*GaveUpError](r.Err); !ok || r.Outcome != OutcomeDead || !ran || ge.Err == nil {
		t.Errorf("retry past the budget: %+v, ran %v; want dead with the failure", r, ran)
	}
}

func fakeAt(t time.Time) *clock.Fake { return clock.NewFake(t) }
