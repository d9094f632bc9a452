// Package cli is the scheduler command as a library: its flags, and the
// operator commands (-check, -trigger, -status, ...) and how they print.
// Without a mode it runs the daemon (internal/daemon) with the config and
// database it found. cmd/scheduler is Run with no options; a team builds
// its own binary with its own Go task types by calling Run with Options.Tasks.
//
// It owns no state and no SQL: the schedule, tasks and queue packages do.
// It does not know how the daemon is wired: its pools, beat, metrics and
// HTTP server are internal/daemon's.
package cli
