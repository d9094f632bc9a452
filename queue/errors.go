package queue

import (
	"context"
	"fmt"
	"time"

	"scheduler/queue/store"
)

// The contract's errors (see package store), under the names callers of the
// queue use.
var (
	// ErrNotFound is returned when a job, schedule or key does not exist.
	ErrNotFound = store.ErrNotFound
	// ErrCursorMoved is returned by Advance when the schedule's cursor is
	// no longer where the caller read it: another beat advanced it first.
	ErrCursorMoved = store.ErrCursorMoved
	// ErrSchemaTooNew is returned by Open for a database written by a
	// newer version of this program.
	ErrSchemaTooNew = store.ErrSchemaTooNew
	// ErrUnsupported is returned by an operation that the storage engine
	// does not offer.
	ErrUnsupported = store.ErrUnsupported
)

// Permanent marks err as unfixable by retrying: the job is dead at once.
func Permanent(err error) error { return &PermanentError{Err: err} }

// PermanentError is a handler failure that retrying cannot fix.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// RetryAfter asks for the next attempt no earlier than d from now. It still
// spends an attempt: when none is left the job is dead.
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

// TimeoutError is the cause (context.Cause) of an attempt's context that
// ended at its type's Timeout, so that a handler can say which deadline
// stopped it. It unwraps to context.DeadlineExceeded. A timeout is an
// ordinary failed attempt.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string { return "timed out after " + e.Timeout.String() }
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }
