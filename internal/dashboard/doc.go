// Package dashboard serves the daemon's web pages: the schedules with the
// strip of their last instants, one schedule with its fan-out items, a run
// with its attempts and why it is not running, the jobs and the alarms.
// The server renders them with html/template from embedded templates and
// CSS; a page reads without JavaScript, and a small script only reloads it,
// but for a running job's output, which another refreshes in place from
// /runs/ID/live (live.go).
//
// Every queue read is bounded: a LIMIT over an index range, the job counts
// kept beside the jobs, or the newest store.ListScanBound jobs for a
// filtered list. No page counts the jobs table. It knows nothing of HTTP
// listeners or the daemon's wiring: the daemon mounts Auth.Handler, whose
// Session is the pages' Config.SessionFunc.
//
// Auth (auth.go) guards the pages. Every request must name the dashboard
// in its Host (client.go), against DNS rebinding. With a token or users in
// [http], every page needs a login at /login, whose failures are limited
// per address and account (limit.go), carried by a session cookie; without
// any, pages read without one and nothing can be done. Actions (actions.go)
// trigger, pause, resume, retry and cancel through the commands'
// functions, only when [http] actions = true, for a logged-in session with
// its CSRF token, from the dashboard's own origin; each is logged with who
// did it.
package dashboard
