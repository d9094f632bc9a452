// Package cron computes when a schedule fires: it parses cron expressions
// bound to a time zone (Expr), applies daylight-saving rules, lists the
// instants due in a range, and plans which missed instants run under a
// catch-up policy (Plan).
//
// It owns the arithmetic of instants and nothing durable: it knows
// nothing of schedules.toml, the queue or jobs. The config package parses
// the cron and catch_up keys with it; the beat asks it for due instants.
//
// ExampleExpr_Next shows the daylight-saving rules at work.
package cron
