// Package examplet stands in for a test's *testing.T in the runnable
// examples of queuetest and scheduletest, where Go gives none: a failure
// panics, so the example fails with its message; Finish runs the cleanups.
// It also gives the PostgreSQL examples their database: Main, for a
// package's TestMain, leaves them out where SCHEDULER_TEST_POSTGRES is
// unset, and PostgresURL hands each a schema of its own.
package examplet

import (
	"fmt"
	"os"
	"slices"
)

// T is what the test helpers use of testing.TB.
type T struct {
	cleanups []func()
}

// New returns a T; defer its Finish.
func New() *T { return &T{} }

// Helper does nothing.
func (t *T) Helper() {}

// Fatalf panics with the failure.
func (t *T) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Errorf panics with the failure.
func (t *T) Errorf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Cleanup registers f for Finish.
func (t *T) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

// TempDir returns a new directory that Finish removes.
func (t *T) TempDir() string {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		t.Fatalf("temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Finish runs the cleanups, the last registered first.
func (t *T) Finish() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
	t.cleanups = nil
}
