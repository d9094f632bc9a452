// Package daemon is the scheduler's daemon: the wiring of the store, the
// task registry, the worker pools, the beat, the metrics and the HTTP
// server (/metrics, /healthz and the dashboard), built by New; serving, by
// Run, until SIGTERM or SIGINT, with a reload of the config on SIGHUP,
// systemd's sd_notify protocol and its watchdog; and the stop, within a
// budget that systemd is told of.
//
// It owns no state and no SQL: the schedule, tasks and queue packages do.
// It knows neither flags nor where files are found, and never sees the
// database's URL: internal/cli parses the command line, finds the config
// and the database, and hands them over in a Config whose OpenFunc opens
// the database.
package daemon
