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

// The database is a SQLite file, or a PostgreSQL server named by a URL
// (postgres://user:password@host:5432/name?...). What is particular to a
// file (relative paths, -backup) is skipped for a URL. A URL is shown only
// as redactDSN gives it, never with its password.

// redacted replaces a password wherever a database is named.
const redacted = "xxxxx"

// isDSN reports whether db names a PostgreSQL database rather than a
// SQLite file. ./ names a file whose path starts with postgres://.
func isDSN(db string) bool { return engine.IsPostgres(db) }

// redactDSN is db as it may be shown: a URL's passwords, in its user
// information and password= parameters, become xxxxx. In a malformed URL
// it hides more rather than less.
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

// dsnPasswordSpans returns the sorted, merged byte ranges of the passwords.
func dsnPasswordSpans(db string) [][2]int {
	var spans [][2]int
	start := strings.Index(db, "://") + len("://")
	// As Go's url package reads it: the authority ends at the first / ? or
	// #, the user information at its last @, the user at the first colon.
	rest := db[start:]
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	// An unescaped / ? or # in a password would end the authority early,
	// so a later @ ends the user information. An @ in the query then hides
	// more than the password: the safe error.
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
	// password= parameters follow the first ?, wherever the authority
	// ended, so that no reading of a malformed URL misses one.
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

// dsnSecrets are the URL's passwords, as written and unescaped.
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

// redactedError is err with a database password taken out of its text.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// bareSecretLen is the shortest password redactErr replaces where it
// stands alone. A shorter one is replaced only as :PASSWORD@ or
// password=PASSWORD: replacing every "b" would mangle the message and
// reveal the password all the same.
const bareSecretLen = 6

// redactErr replaces every password of the URL db in err's text. A
// driver may quote it cleaned as a path (postgres:/user:PASSWORD@...), as
// password=PASSWORD, or alone.
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

// openDatabase opens the queue in db, a path or a URL; it is this
// package's only call of engine.Open. Its errors hold no password.
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
