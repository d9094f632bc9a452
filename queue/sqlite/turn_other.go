//go:build !unix

package sqlite

import (
	"context"
	"time"

	"github.com/scheduler-run/scheduler/clock"
)

// turnLock is a no-op where flock(2) is missing: writers of several
// processes then wait in SQLite's busy handler alone.
type turnLock struct{}

func newTurnLock(string, clock.Clock) *turnLock { return &turnLock{} }

func (l *turnLock) lock(context.Context, time.Duration) (func(), error) { return func() {}, nil }

func (l *turnLock) close() error { return nil }
