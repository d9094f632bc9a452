package cli

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/scheduler-run/scheduler/internal/engine"
	"github.com/scheduler-run/scheduler/queue"
)

// The database is a SQLite file or a PostgreSQL server. A PostgreSQL
// database is named by a URL (postgres://user:password@host:5432/name?...);
// everything else is a file's path. What is particular to a file (taking a
// relative path from the config's directory, looking for the file before a
// read-only command, -backup) is skipped for a URL, and a URL is never
// shown with its password: it appears in logs, -check, -status and errors
// as redactDSN gives it.

// redacted replaces a password wherever a database is named.
const redacted = "xxxxx"

// isDSN reports whether db names a PostgreSQL database rather than a SQLite
// file. A file whose path starts with postgres:// cannot be named; ./ in
// front of it would.
func isDSN(db string) bool { return engine.IsPostgres(db) }

// redactDSN is db as it may be shown: a file's path as it is; a URL with the
// password of its user information and of a password= parameter replaced by
// xxxxx. It does not need the URL to be valid: in a malformed one it hides
// more rather than less.
func redactDSN(db string) string {
	if !isDSN(db) {
		return db
	}
	pw := dsnPasswordSpans(db)
	var b strings.Builder
	last := 0
	for _, s := range pw {
		b.WriteString(db[last:s[0]])
		b.WriteString(redacted)
		last = s[1]
	}
	b.WriteString(db[last:])
	return b.String()
}

// dsnPasswordSpans returns the [start, end) byte ranges of the passwords in
// the URL db (of its user information and of password= parameters), in
// order, overlaps merged.
func dsnPasswordSpans(db string) [][2]int {
	var spans [][2]int
	start := strings.Index(db, "://") + len("://")
	// The authority ends at the first / ? or #, its user information at the
	// last @ in it, the user at the first colon (as Go's url package reads
	// it, an unescaped @ in a password included).
	rest := db[start:]
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	// A password holding an unescaped / ? or # would end the authority
	// early: an @ further on is taken to end the user information. (An @ in
	// the query then makes it take in more than the password: the safe
	// error.)
	if at := strings.LastIndex(rest, "@"); at >= end {
		if j := strings.IndexAny(rest[at:], "/?#"); j >= 0 {
			end = at + j
		} else {
			end = len(rest)
		}
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		if colon := strings.Index(rest[:at], ":"); colon >= 0 {
			spans = append(spans, [2]int{start + colon + 1, start + at})
		}
	}
	// password= parameters are looked for after the first ?, wherever the
	// authority ended, so that no reading of a malformed URL hides one.
	q := strings.Index(rest, "?")
	if q < 0 {
		return spans
	}
	pos := start + q + 1
	query := db[pos:]
	if h := strings.Index(query, "#"); h >= 0 {
		query = query[:h]
	}
	for param := range strings.SplitSeq(query, "&") {
		if k, _, ok := strings.Cut(param, "="); ok && strings.EqualFold(k, "password") {
			spans = append(spans, [2]int{pos + len(k) + 1, pos + len(param)})
		}
		pos += len(param) + 1
	}
	// Merge what overlaps (a user information that took in the query).
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	merged := spans[:0]
	for _, s := range spans {
		if n := len(merged); n > 0 && s[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], s[1])
			continue
		}
		merged = append(merged, s)
	}
	return merged
}

// dsnSecrets are the passwords of the URL db, as written and unescaped, so
// that an error that quotes one in some other form can be cleaned.
func dsnSecrets(db string) []string {
	var out []string
	for _, s := range dsnPasswordSpans(db) {
		pw := db[s[0]:s[1]]
		if pw == "" {
			continue
		}
		out = append(out, pw)
		if u, err := url.PathUnescape(pw); err == nil && u != pw && u != "" {
			out = append(out, u)
		}
	}
	return out
}

// redactedError is an error whose text had a database's password taken out.
// It unwraps to the original, so errors.Is and errors.As still see it.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// bareSecretLen is the shortest password that redactErr also replaces
// where it stands alone in a message. A shorter one is replaced only as
// user:PASSWORD@ or password=PASSWORD: replacing every "b" of a message
// would mangle it and tell the password all the same.
const bareSecretLen = 6

// redactErr returns err with every password of the URL db replaced by
// xxxxx in its text. A driver's error may quote the URL it was given,
// cleaned as a path (postgres:/user:PASSWORD@...), in libpq's keyword form
// (password=PASSWORD) or the password alone; none of it may reach a log or
// a terminal.
func redactErr(err error, db string) error {
	if err == nil || !isDSN(db) {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), db, redactDSN(db))
	for _, s := range dsnSecrets(db) {
		msg = strings.ReplaceAll(msg, ":"+s+"@", ":"+redacted+"@")
		msg = strings.ReplaceAll(msg, "password="+s, "password="+redacted)
		if len(s) >= bareSecretLen {
			msg = strings.ReplaceAll(msg, s, redacted)
		}
	}
	return &redactedError{msg: msg, err: err}
}

// openDatabase opens the queue in db, a file's path or a PostgreSQL URL. It
// is the one place this package calls engine.Open. An error names a URL
// redacted and holds no password.
func openDatabase(ctx context.Context, db string, cfg engine.Config) (*queue.Client, error) {
	if !isDSN(db) {
		return engine.Open(ctx, db, cfg)
	}
	q, err := engine.Open(ctx, db, cfg)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", redactDSN(db), redactErr(err, db))
	}
	return q, nil
}
