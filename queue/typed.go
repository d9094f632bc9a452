package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// JobArgs are the arguments of a typed job that name their own job type.
// A struct implementing it needs no type name where it is enqueued or
// registered (see MarshalArgs and Register).
type JobArgs interface {
	Kind() string
}

// TypedJob is a claimed job with its payload decoded into Args. The
// embedded Job is the stored job (ID, Key, Attempt, ScheduledAt, ...).
type TypedJob[T any] struct {
	*Job
	Args T
}

// WorkFunc is a typed handler: it gets the job's payload decoded into T and
// returns the attempt's output, whose tail (MaxOutput bytes) the history
// keeps, and an error that decides the job's fate as Handler's does.
//
// A WorkFunc is a Handler, so it registers wherever one does: Pool.Register,
// tasks.Registry.Register. A payload that does not decode into T is a
// permanent failure, naming the job type, T and the field; the handler is
// not called. The payload's unknown fields are ignored.
type WorkFunc[T any] func(ctx context.Context, job *TypedJob[T]) (output string, err error)

// Work decodes j's payload into T and calls f. An output f returns replaces
// one set with j.SetOutput; an empty one keeps it.
func (f WorkFunc[T]) Work(ctx context.Context, j *Job) error {
	tj := &TypedJob[T]{Job: j}
	if err := decodeArgs(j, &tj.Args); err != nil {
		return Permanent(err)
	}
	out, err := f(ctx, tj)
	if out != "" {
		j.SetOutput([]byte(out))
	}
	return err
}

// Register makes fn the handler of jobType in p, with the policy tc, as
// Pool.Register does. An empty jobType takes T's Kind (see JobArgs); a
// jobType that differs from T's Kind is an error.
func Register[T any](p *Pool, jobType string, fn WorkFunc[T], tc TypeConfig) error {
	if fn == nil {
		return fmt.Errorf("register %s: nil handler", jobType)
	}
	var zero T
	jobType, err := TypeOf(jobType, zero)
	if err != nil {
		return fmt.Errorf("register: %w", err)
	}
	return p.Register(jobType, fn, tc)
}

// MarshalArgs returns nj with Payload the JSON of args and, when nj.Type is
// empty, Type the Kind of args (see JobArgs). The result enqueues anywhere a
// NewJob does: Client.Enqueue and EnqueueBatch, and the engines' EnqueueTx in
// a transaction of the caller. It fails for args that do not marshal, a
// missing type, or an nj.Type that differs from args' Kind.
func MarshalArgs(args any, nj NewJob) (NewJob, error) {
	typ, err := TypeOf(nj.Type, args)
	if err != nil {
		return NewJob{}, fmt.Errorf("marshal args: %w", err)
	}
	payload, err := json.Marshal(args)
	if err != nil {
		return NewJob{}, fmt.Errorf("marshal args of job type %q: %w", typ, err)
	}
	nj.Type, nj.Payload = typ, payload
	return nj, nil
}

// EnqueueArgs enqueues a job of args (see MarshalArgs) with nj's other
// fields: its Key, RunAt, Priority, MaxAttempts, ...
func (c *Client) EnqueueArgs(ctx context.Context, args any, nj NewJob) (Enqueued, error) {
	nj, err := MarshalArgs(args, nj)
	if err != nil {
		return Enqueued{}, err
	}
	return c.Enqueue(ctx, nj)
}

// TypeOf returns the job type of args: given, else the Kind of args (see
// JobArgs). It fails when neither names one, or both do and differ.
func TypeOf(given string, args any) (string, error) {
	kind := kindOf(args)
	switch {
	case given == "" && kind == "":
		return "", fmt.Errorf("no job type: name one, or give %s a Kind method", typeName(args))
	case given == "":
		return kind, nil
	case kind != "" && kind != given:
		return "", fmt.Errorf("job type %q differs from %s's Kind %q", given, typeName(args), kind)
	}
	return given, nil
}

// kindOf returns the Kind of args, through a pointer to a copy when Kind has
// a pointer receiver; "" when it has none.
func kindOf(args any) string {
	rv := reflect.ValueOf(args)
	if !rv.IsValid() || rv.Kind() == reflect.Pointer && rv.IsNil() {
		return ""
	}
	if k, ok := args.(JobArgs); ok {
		return k.Kind()
	}
	p := reflect.New(rv.Type())
	p.Elem().Set(rv)
	if k, ok := p.Interface().(JobArgs); ok {
		return k.Kind()
	}
	return ""
}

func typeName(v any) string {
	if v == nil {
		return "nil"
	}
	return reflect.TypeOf(v).String()
}

// decodeArgs decodes j's payload into dst (a pointer), an empty payload as {}.
func decodeArgs(j *Job, dst any) error {
	payload := j.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	err := json.Unmarshal(payload, dst)
	if err == nil {
		return nil
	}
	into := reflect.TypeOf(dst).Elem().String()
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return &ArgsError{Type: j.Type, Args: into, Err: fmt.Errorf("cannot use JSON %s", te.Value)}
		}
		return &ArgsError{Type: j.Type, Args: into, Field: te.Field,
			Err: fmt.Errorf("cannot use JSON %s as %s", te.Value, te.Type)}
	}
	return &ArgsError{Type: j.Type, Args: into, Err: err}
}

// ArgsError is the failure of a job whose payload does not decode into its
// typed handler's arguments. It is permanent: retrying cannot fix the
// payload.
type ArgsError struct {
	Type  string // the job type
	Args  string // the arguments' Go type
	Field string // the JSON field at fault, dotted from the top; "" when not one field
	Err   error
}

// Error reads `decode payload of job type "report" into main.Report: field
// "day": cannot use JSON string as int`.
func (e *ArgsError) Error() string {
	s := fmt.Sprintf("decode payload of job type %q into %s", e.Type, e.Args)
	if e.Field != "" {
		s += fmt.Sprintf(": field %q", e.Field)
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the decoding error.
func (e *ArgsError) Unwrap() error { return e.Err }
