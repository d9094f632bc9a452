// Package daemon is the scheduler's daemon. New wires the store, the task
// registry, the worker pools, the beat, the metrics and the HTTP server
// (/metrics, /healthz, the dashboard). Run serves until SIGTERM or SIGINT,
// reloads the config on SIGHUP, speaks systemd's sd_notify and watchdog,
// and stops within a budget systemd is told of.
//
// It owns no state and no SQL: schedule, tasks and queue do. It knows
// neither flags nor file locations, and never sees the database's URL:
// internal/cli hands them over in a Config whose OpenFunc opens it.
package daemon
