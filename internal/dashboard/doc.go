// Package dashboard serves the daemon's web pages: the schedules with the
// strip of their last instants, one schedule with its fan-out items, a run
// with its attempts and why it is not running, the jobs and the alarms.
// Pages are rendered on the server with html/template from embedded
// templates and CSS; a page reads without JavaScript, and a small embedded
// script only reloads it.
//
// It reads the queue through the operators' reads of package queue, each
// bounded: a LIMIT over a range of an index, the job counts kept beside the
// jobs, or, for a list of jobs filtered by task or schedule, the newest
// store.ListScanBound jobs. No page counts the jobs table; the schedules
// page costs a few reads per schedule. It knows nothing of HTTP listeners
// or the daemon's wiring: the daemon mounts the handler Auth.Handler
// returns, whose Session is the pages' Config.SessionFunc.
//
// Auth (auth.go) guards the pages: every request must name the dashboard
// in its Host (client.go), against pages that rebind their own name to
// this address; with a token or users in [http], every page asks for a
// login at /login, whose failures are limited per address and per account
// (limit.go), and a session cookie carries it; without any, the pages read
// without one and nothing can be done. Actions
// (actions.go) trigger, pause, resume, retry and cancel, through the same
// functions as the commands of those names, only when [http] actions =
// true, for a logged-in session, with its CSRF token, from the
// dashboard's own origin; each is logged with who did it.
package dashboard
