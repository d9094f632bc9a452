package cli

import (
	"fmt"
	"io"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// hashToken is -hash-token: it prints the hash of the API token on the
// first line of in, for an [[api.token]]'s hash. The token must be random
// and long, since its hash is a fast one; it is never printed or logged.
func hashToken(in io.Reader, stdout io.Writer) error {
	token, err := readLine(in, "-hash-token")
	if err != nil {
		return err
	}
	if len(token) < config.MinTokenLen {
		return usagef("-hash-token: a token of %d bytes on standard input: want at least %d random bytes, such as openssl rand -base64 32 prints", len(token), config.MinTokenLen)
	}
	fmt.Fprintln(stdout, config.HashToken(token).String())
	return nil
}
