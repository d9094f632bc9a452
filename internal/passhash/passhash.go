// Package passhash turns a password or token into the text the config
// keeps instead, and checks a password against it. The text describes
// itself, pbkdf2-sha256$ITERATIONS$SALT$KEY (unpadded standard base64), so
// that a later, stronger setting still checks older hashes. -hash-password
// writes it, the config loader parses it, the dashboard checks logins.
package passhash

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Scheme is the first field of the text.
const Scheme = "pbkdf2-sha256"

// The settings New uses for -hash-password, and the bounds Parse accepts.
const (
	// DefaultIterations follows OWASP's advice for PBKDF2-HMAC-SHA256.
	DefaultIterations = 600000
	// MinIterations is the fewest Parse accepts: fewer make a stolen
	// config cheap to guess.
	MinIterations = 100000
	// MaxIterations is the most Parse accepts, so that a typo cannot make
	// every login slow.
	MaxIterations = 100000000

	saltLen = 16
	keyLen  = 32
	minSalt = 8
)

var b64 = base64.RawStdEncoding

// Hash is a parsed hash: what a password must derive to. The zero Hash
// matches nothing.
type Hash struct {
	iterations int
	salt       []byte
	key        []byte
}

// New hashes password with a random salt and iterations rounds. Its text
// passes Parse only from MinIterations on; tests use fewer.
func New(password string, iterations int) (Hash, error) {
	if iterations < 1 || iterations > MaxIterations {
		return Hash{}, fmt.Errorf("%d iterations: want 1 to %d", iterations, MaxIterations)
	}
	salt := make([]byte, saltLen)
	rand.Read(salt)
	key, err := pbkdf2.Key(sha256.New, password, salt, iterations, keyLen)
	if err != nil {
		return Hash{}, fmt.Errorf("hash: %w", err)
	}
	return Hash{iterations: iterations, salt: salt, key: key}, nil
}

// String is the text the config keeps: pbkdf2-sha256$600000$SALT$KEY.
func (h Hash) String() string {
	if h.key == nil {
		return ""
	}
	return Scheme + "$" + strconv.Itoa(h.iterations) + "$" + b64.EncodeToString(h.salt) + "$" + b64.EncodeToString(h.key)
}

// ErrMalformed is wrapped by Parse's error for text that is not a hash.
var ErrMalformed = errors.New("malformed hash")

// Parse reads String's text. It derives no key, so it is cheap; its error
// does not quote the text.
func Parse(s string) (Hash, error) {
	const want = "want " + Scheme + "$ITERATIONS$SALT$KEY as scheduler -hash-password prints it"
	parts := strings.Split(s, "$")
	if len(parts) != 4 {
		return Hash{}, fmt.Errorf("%w: %d fields separated by $, %s", ErrMalformed, len(parts), want)
	}
	if parts[0] != Scheme {
		return Hash{}, fmt.Errorf("%w: scheme %q, %s", ErrMalformed, parts[0], want)
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return Hash{}, fmt.Errorf("%w: iterations %q are not a number, %s", ErrMalformed, parts[1], want)
	}
	if n < MinIterations || n > MaxIterations {
		return Hash{}, fmt.Errorf("%w: %d iterations, want %d to %d", ErrMalformed, n, MinIterations, MaxIterations)
	}
	salt, err := b64.DecodeString(parts[2])
	if err != nil || len(salt) < minSalt {
		return Hash{}, fmt.Errorf("%w: the salt is not %d or more bytes of unpadded base64, %s", ErrMalformed, minSalt, want)
	}
	key, err := b64.DecodeString(parts[3])
	if err != nil || len(key) != keyLen {
		return Hash{}, fmt.Errorf("%w: the key is not %d bytes of unpadded base64, %s", ErrMalformed, keyLen, want)
	}
	return Hash{iterations: n, salt: salt, key: key}, nil
}

// IsZero reports whether h is the zero Hash, which matches nothing.
func (h Hash) IsZero() bool { return h.key == nil }

// Match reports whether password derives to h, in time independent of
// the password.
func (h Hash) Match(password string) bool {
	if h.key == nil {
		return false
	}
	key, err := pbkdf2.Key(sha256.New, password, h.salt, h.iterations, len(h.key))
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(key, h.key) == 1
}

// Equal reports whether h and o are the same hash (same salt and key).
func (h Hash) Equal(o Hash) bool {
	return h.iterations == o.iterations && string(h.salt) == string(o.salt) && string(h.key) == string(o.key)
}
