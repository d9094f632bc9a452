// Package redact masks known secrets in text for people to read: a value
// in each form a program may print, JSON-encode or Go-quote it, and a
// URL's password, query values and fragment. The config's task redactor
// and the HTTP handler share it, so a secret is masked the same wherever
// found. It knows nothing of payloads, tasks or the queue.
package redact

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Mask is what a secret is replaced with.
const Mask = "[redacted]"

// MinLen is the shortest secret masked: a shorter one ("on") would mask
// ordinary text everywhere.
const MinLen = 4

// A Secret is a value to mask wherever it appears.
type Secret struct {
	// Value is the bytes a program receives; it need not be valid UTF-8.
	Value string
	// Written are other texts of the value as given, such as its JSON
	// literal without quotes, or its percent-encoded form in a URL.
	Written []string
}

// A Set masks secrets in text. The zero Set masks nothing. A Set is
// immutable and may be shared between goroutines.
type Set struct {
	forms []string // longest first
}

// NewSet returns the Set that masks each secret of at least MinLen bytes
// in each of its Forms.
func NewSet(secrets ...Secret) Set {
	var forms []string
	for _, s := range secrets {
		if len(s.Value) < MinLen {
			continue
		}
		for _, f := range Forms(s.Value, s.Written...) {
			// A form as written may be empty (a URL's empty fragment).
			if len(f) >= MinLen {
				forms = append(forms, f)
			}
		}
	}
	// Longest first, so a secret containing another is masked whole; then
	// by text, for an order independent of the input.
	slices.SortFunc(forms, func(a, b string) int {
		return cmp.Or(len(b)-len(a), strings.Compare(a, b))
	})
	return Set{forms: slices.Compact(forms)}
}

// Empty reports whether s masks nothing.
func (s Set) Empty() bool { return len(s.forms) == 0 }

// Apply returns text with every form of every secret replaced by Mask.
func (s Set) Apply(text string) string {
	for _, f := range s.forms {
		text = strings.ReplaceAll(text, f, Mask)
	}
	return text
}

// Forms returns the texts, without quotes, under which value or one of
// written may appear in output: as is; as Go's JSON decoder gives it
// (invalid UTF-8 becomes U+FFFD); JSON-escaped with and without HTML
// escaping, and with non-ASCII escaped; and each of these Go-quoted as %q
// and %+q write it.
func Forms(value string, written ...string) []string {
	bases := append([]string{value}, written...)
	if valid := jsonDecoded(value); valid != value {
		bases = append(bases, valid)
	}
	var out []string
	for _, b := range bases {
		for _, e := range []string{b, jsonString(b, false), jsonString(b, true), asciiJSON(jsonString(b, false))} {
			out = append(out, e, unquote(strconv.Quote(e)), unquote(strconv.QuoteToASCII(e)))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// jsonDecoded is s as Go's JSON decoder gives it: invalid UTF-8 bytes
// become U+FFFD.
func jsonDecoded(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for a bad byte, which is U+FFFD
		i += n
	}
	return b.String()
}

// jsonString is s as a JSON string's content, as Go's encoder writes it.
func jsonString(s string, escapeHTML bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(escapeHTML)
	if err := e.Encode(s); err != nil {
		return s // a string always encodes
	}
	return unquote(strings.TrimSuffix(b.String(), "\n"))
}

// asciiJSON escapes each non-ASCII character of JSON string content as
// \uXXXX, as ASCII-only encoders do (Python's json.dumps).
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// unquote drops the first and last byte of a quoted string.
func unquote(q string) string {
	if len(q) < 2 {
		return q
	}
	return q[1 : len(q)-1]
}

// UnquoteJSON returns the bytes the quoted JSON string literal lit stands
// for, keeping invalid UTF-8 bytes where Go's decoder gives U+FFFD, as
// another decoder may. ok is false when lit is not a string literal.
func UnquoteJSON(lit []byte) (s string, ok bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	in := lit[1 : len(lit)-1]
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(in) {
			return "", false
		}
		i++
		switch in[i] {
		case '"', '\\', '/':
			b.WriteByte(in[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(in[i+1:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16IsHigh(r) {
				if lo, ok := hex4(in[min(i+3, len(in)):]); ok && i+2 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' && utf16IsLow(lo) {
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
					i += 6
				} else {
					r = utf8.RuneError
				}
			} else if utf16IsLow(r) {
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}

func utf16IsHigh(r rune) bool { return r >= 0xd800 && r < 0xdc00 }
func utf16IsLow(r rune) bool  { return r >= 0xdc00 && r < 0xe000 }
