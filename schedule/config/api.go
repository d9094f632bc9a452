package config

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/scheduler-run/scheduler/schedule/internal/suggest"
)

// APISettings is the [api] table: who may call /api/v1 on the [http]
// listener. Without tokens every call is refused.
type APISettings struct {
	// Tokens are the [[api.token]] tables, in file order.
	Tokens []APIToken
}

// APIAccess is what a token may do.
type APIAccess string

// The accesses of a token (key access).
const (
	// APIRead reads: status, schedules, jobs, next runs, alarms, incidents.
	APIRead APIAccess = "read"
	// APIAct reads, and triggers, pauses, resumes, backfills, retries,
	// cancels, discards and acknowledges.
	APIAct APIAccess = "act"
)

// APIToken is an [[api.token]] table: a caller of the API.
type APIToken struct {
	// Name names the caller in the logs and the job records (key name):
	// 1 to 64 letters, digits and -_.@, unique.
	Name string
	// Hash is the token's SHA-256 (key hash, "sha256:" and 64 hex digits,
	// from scheduler -hash-token). The config never holds the token.
	Hash TokenHash
	// Access is APIRead or APIAct (key access). Default: APIRead.
	Access APIAccess
}

// TokenHash is the SHA-256 of an API token. A fast hash suffices: a token
// is random and long (-hash-token refuses fewer than MinTokenLen bytes),
// so nothing is gained by guessing it from its hash.
type TokenHash [sha256.Size]byte

// TokenHashPrefix starts a TokenHash's text.
const TokenHashPrefix = "sha256:"

// MinTokenLen is the shortest token -hash-token accepts, in bytes.
const MinTokenLen = 32

// HashToken returns token's TokenHash.
func HashToken(token string) TokenHash { return sha256.Sum256([]byte(token)) }

// ParseTokenHash parses "sha256:" followed by 64 hex digits.
func ParseTokenHash(s string) (TokenHash, error) {
	var h TokenHash
	hexText, ok := strings.CutPrefix(s, TokenHashPrefix)
	b, err := hex.DecodeString(hexText)
	if !ok || err != nil || len(b) != len(h) {
		return h, fmt.Errorf("%q is not a token hash: want %s and 64 hex digits (scheduler -hash-token prints one)", s, TokenHashPrefix)
	}
	copy(h[:], b)
	return h, nil
}

// String is the hash's text, as the config holds it.
func (h TokenHash) String() string { return TokenHashPrefix + hex.EncodeToString(h[:]) }

// Token returns the token whose hash is h, comparing each in constant time
// and every one whatever matches, so that the time taken tells nothing.
func (a APISettings) Token(h TokenHash) (APIToken, bool) {
	var found APIToken
	ok := 0
	for _, t := range a.Tokens {
		if subtle.ConstantTimeCompare(t.Hash[:], h[:]) == 1 {
			found, ok = t, 1
		}
	}
	return found, ok == 1
}

// ScheduleHint is ", did you mean ...?" for a name near name among the
// schedules, or "".
func (c *Config) ScheduleHint(name string) string {
	if c == nil {
		return ""
	}
	return suggest.Hint(name, slices.Sorted(maps.Keys(c.byName)))
}

var apiTokenKeys = map[string]bool{"name": true, "hash": true, "access": true}

// loadAPI decodes the [api] table into cfg.API.
func (l *loader) loadAPI(p toml.Primitive, cfg *Config) {
	var raw rawAPI
	if !l.decode(p, &raw, where{table: "api", path: []string{"api"}}) {
		return
	}
	var raws []map[string]toml.Primitive
	if !l.decode(raw.Token, &raws, where{table: "api", field: "token", path: []string{"api", "token"}}) {
		return
	}
	names, hashes := map[string]int{}, map[TokenHash]int{}
	for i, raw := range raws {
		w := where{table: "api.token", job: fmt.Sprintf("#%d", i+1), path: []string{"api", "token", elem(i)}}
		t := APIToken{Access: APIRead}
		nw := w.with("name")
		if l.decode(raw["name"], &t.Name, nw) {
			switch {
			case !validUserName(t.Name):
				l.errorf(nw, "%q: use 1 to %d letters, digits and -_.@", t.Name, maxUserName)
			case names[t.Name] > 0:
				l.errorf(nw, "%q is already the name of [[api.token]] #%d", t.Name, names[t.Name])
			default:
				names[t.Name] = i + 1
				w.job = t.Name
			}
		} else if !present(raw["name"]) {
			l.errorf(w, "no name")
		}
		var text string
		hw := w.with("hash")
		if l.decode(raw["hash"], &text, hw) {
			h, err := ParseTokenHash(text)
			switch {
			case err != nil:
				l.add(hw, err)
			case hashes[h] > 0:
				l.errorf(hw, "the same token as [[api.token]] #%d: give each caller a token of its own", hashes[h])
			default:
				hashes[h] = i + 1
				t.Hash = h
			}
		} else if !present(raw["hash"]) {
			l.errorf(w, "no hash (scheduler -hash-token prints one)")
		}
		var access string
		if aw := w.with("access"); l.decode(raw["access"], &access, aw) {
			if t.Access = APIAccess(access); t.Access != APIRead && t.Access != APIAct {
				l.errorf(aw, "%q: want %q or %q", access, APIRead, APIAct)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(raw)) {
			if !apiTokenKeys[k] {
				l.errorf(w.with(k), "unknown key %q%s", k, keyHint(k, apiTokenKeys))
			}
		}
		if t.Name != "" && hashes[t.Hash] == i+1 {
			cfg.API.Tokens = append(cfg.API.Tokens, t)
		}
	}
}
