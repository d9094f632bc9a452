// Package cli is the scheduler command as a library: its flags, the
// operator commands (-check, -trigger, -status, ...) and how they print.
// Without a mode it runs the daemon (internal/daemon). cmd/scheduler is Run
// with no options; Options.Tasks adds a team's own Go task types.
//
// It owns no state and no SQL: schedule, tasks and queue do. It does not
// know how the daemon is wired (pools, beat, metrics, HTTP server).
package cli
