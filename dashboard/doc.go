// Package dashboard serves the daemon's web pages: the schedules with the
// strip of their last instants, one schedule with its fan-out items, a run
// with its attempts and why it is not running, the jobs and the alarms.
// Pages are rendered on the server with html/template from embedded
// templates and CSS; a page reads without JavaScript, and a small embedded
// script only reloads it.
//
// It reads the queue through the operators' reads of package queue, each
// bounded (a LIMIT, or the job counts kept beside the jobs): no page counts
// or sorts the jobs table. It knows nothing of HTTP listeners, the daemon's
// wiring or authentication: the daemon mounts the handler New returns, and
// Config.SessionFunc is where a login and the action forms plug in.
package dashboard
