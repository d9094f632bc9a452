// Package cli is the scheduler command as a library: its flags, the daemon's
// wiring of the beat, the worker pool and maintenance, signal handling,
// sd_notify, and the operator commands (-check, -trigger, -status, ...).
// cmd/scheduler is Run with no options; a team builds its own binary with its
// own Go task types by calling Run with Options.Tasks (see the example).
//
// It owns no state and no SQL: the schedule, tasks and queue packages do.
package cli
