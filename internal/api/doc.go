// Package api serves /api/v1, the JSON API, on the daemon's listener: the
// reads and actions of the command line for programs, each request
// authenticated by a bearer token of [api] and every action logged with
// its token's name. It calls the functions the command line and the
// dashboard call (package schedule's controls, queue.Client's views and
// writes); it holds no operation of its own. Errors are RFC 9457 problem
// details with a stable code. The OpenAPI 3.1 document, openapi.json, is
// embedded and served at /api/v1/openapi.json.
//
// The API reads no cookie, so a browser's credentials cannot act on it:
// it needs no CSRF token. It knows nothing of the dashboard's pages or
// sessions.
package api
