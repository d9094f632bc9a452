package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// PasswordMask replaces a URL's password, as url.URL.Redacted does.
const PasswordMask = "xxxxx"

// URL returns s as it may be shown: the password replaced by
// PasswordMask, each query value and the fragment by Mask (a parameter
// without "=" whole), the rest as written. It works on the text, so that a
// URL that does not parse is masked too.
func URL(s string) string {
	rest, frag, hasFrag := strings.Cut(s, "#")
	base, query, hasQuery := strings.Cut(rest, "?")
	var b strings.Builder
	b.WriteString(maskPassword(base))
	if hasQuery {
		b.WriteByte('?')
		for i, p := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			name, value, hasValue := strings.Cut(p, "=")
			switch {
			case hasValue && value == "":
				b.WriteString(name + "=")
			case hasValue:
				b.WriteString(name + "=" + Mask)
			case p != "":
				b.WriteString(Mask)
			}
		}
	}
	if hasFrag {
		b.WriteByte('#')
		if frag != "" {
			b.WriteString(Mask)
		}
	}
	return b.String()
}

// maskPassword replaces the password in s, a URL without query and
// fragment.
func maskPassword(s string) string {
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return s
	}
	authority, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	at := strings.LastIndexByte(authority, '@')
	if at < 0 {
		return s
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return s
	}
	return scheme + "://" + user + ":" + PasswordMask + authority[at:] + path
}

// urlInText finds an http or https URL in text. It ends at white space, a
// quote, or a backslash, which escapes the quote ending a Go-quoted one.
var urlInText = regexp.MustCompile("(?i)\\bhttps?://[^\\s\"'`<>\\\\]+")

// URLs returns text with every http or https URL masked as URL masks it,
// such as the one net/http quotes in its errors. Trailing punctuation and
// a closing parenthesis are taken as the sentence's.
func URLs(text string) string {
	return urlInText.ReplaceAllStringFunc(text, func(u string) string {
		end := len(strings.TrimRight(u, ".,:;!?)"))
		return URL(u[:end]) + u[end:]
	})
}

// URLSecrets returns the URL's password, query values and fragment, as
// decoded and as written, so that a Set masks them where a response or an
// error quotes them outside the URL.
func URLSecrets(s string) []Secret {
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	var out []Secret
	if p, ok := u.User.Password(); ok {
		out = append(out, Secret{Value: p, Written: written(u.User.String())})
	}
	for p := range strings.SplitSeq(u.RawQuery, "&") {
		_, raw, ok := strings.Cut(p, "=")
		if !ok {
			raw = p
		}
		v, err := url.QueryUnescape(raw)
		if err != nil {
			v = raw
		}
		out = append(out, Secret{Value: v, Written: []string{raw}})
	}
	if u.Fragment != "" {
		out = append(out, Secret{Value: u.Fragment, Written: []string{u.RawFragment}})
	}
	return out
}

// written is the password of userinfo as written ("user:pa%40ss").
func written(userinfo string) []string {
	if _, p, ok := strings.Cut(userinfo, ":"); ok {
		return []string{p}
	}
	return nil
}
