package queue

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/scheduler-run/scheduler/queue/store"
)

// The errors of package store, under the names the queue's callers use.
var (
	// ErrNotFound is returned when a job, schedule or key does not exist.
	ErrNotFound = store.ErrNotFound
	// ErrUnsupported is returned by an operation the engine does not offer.
	ErrUnsupported = store.ErrUnsupported
	// ErrPayloadTooLarge, ErrPayloadTooDeep and ErrPayloadNotJSON wrap
	// the error of an enqueue whose payload CheckPayload refuses.
	ErrPayloadTooLarge = store.ErrPayloadTooLarge
	ErrPayloadTooDeep  = store.ErrPayloadTooDeep
	ErrPayloadNotJSON  = store.ErrPayloadNotJSON
)

// Permanent marks err as unfixable by retrying: the job is dead at once.
func Permanent(err error) error { return &PermanentError{Err: err} }

// PermanentError is a handler failure that retrying cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// RetryAfter asks for the next attempt no earlier than d from now. It still
// spends an attempt.
func RetryAfter(d time.Duration, err error) error { return &RetryError{After: d, Err: err} }

// RetryError is a handler failure that names when to try again.
type RetryError struct {
	After time.Duration
	Err   error
}

func (e *RetryError) Error() string { return fmt.Sprintf("retry after %s: %v", e.After, e.Err) }
func (e *RetryError) Unwrap() error { return e.Err }

// PanicError is the failure of an attempt whose handler panicked.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }

// TimeoutError is the context.Cause of an attempt that reached its type's
// Timeout; it unwraps to context.DeadlineExceeded. A timeout is an ordinary
// failure.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string { return "timed out after " + e.Timeout.String() }
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// GaveUpError ends a job whose TypeConfig.GiveUpAfter budget ran out. Err is
// the failure whose retry came too late; nil when claimed too late.
type GaveUpError struct {
	After time.Duration
	Err   error
}

// Error reads "gave up after 6h (give_up_after)", then the last failure, if
// any.
func (e *GaveUpError) Error() string {
	s := "gave up after " + ShortDuration(e.After) + " (give_up_after)"
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *GaveUpError) Unwrap() error { return e.Err }

// ShortDuration formats d as time.Duration.String without zero units
// ("6h", "1h30m", "1m30s"), so a configured duration reads as written.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
