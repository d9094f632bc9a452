package tasks

import (
	"errors"

	"github.com/scheduler-run/scheduler/queue"
)

// timeoutText says an attempt ran out of time, and how much it had when
// cause names it.
func timeoutText(cause error) string {
	if te, ok := errors.AsType[*queue.TimeoutError](cause); ok {
		return te.Error()
	}
	return "timed out"
}
