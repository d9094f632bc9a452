package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/scheduler-run/scheduler/internal/passhash"
)

// maxPassword bounds what -hash-password reads: a longer line is no
// password typed or pasted on purpose.
const maxPassword = 1024

// hashPassword is -hash-password: it prints the hash of a password or
// token for [http] token_hash or password_hash. From a terminal it asks
// twice without echo; else it reads the first line. It never prints or
// logs the password.
func hashPassword(in io.Reader, stdout, stderr io.Writer) error {
	var password string
	if f, ok := in.(*os.File); ok && isTerminal(f) {
		first, err := readHidden(f, stderr, "password: ")
		if err != nil {
			return err
		}
		again, err := readHidden(f, stderr, "again: ")
		if err != nil {
			return err
		}
		if first != again {
			return errors.New("-hash-password: the two entries differ; nothing printed")
		}
		password = first
	} else {
		line, err := readLine(in, "-hash-password")
		if err != nil {
			return err
		}
		password = line
	}
	if password == "" {
		return usagef("-hash-password: empty password on standard input")
	}
	h, err := passhash.New(password, passhash.DefaultIterations)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, h.String())
	return nil
}

// readLine reads one line from in, without its line ending, for flag.
func readLine(in io.Reader, flag string) (string, error) {
	r := bufio.NewReaderSize(io.LimitReader(in, maxPassword+2), maxPassword+2)
	line, err := r.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("%s: read standard input: %w", flag, err)
	}
	if !strings.HasSuffix(line, "\n") && len(line) > maxPassword {
		return "", usagef("%s: a line longer than %d bytes on standard input", flag, maxPassword)
	}
	return strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), nil
}

// readHidden prompts on stderr and reads a line from terminal f, unechoed.
func readHidden(f *os.File, stderr io.Writer, prompt string) (string, error) {
	fmt.Fprint(stderr, prompt)
	restore, err := noEcho(f)
	if err != nil {
		return "", fmt.Errorf("-hash-password: turn off the terminal's echo: %w", err)
	}
	line, err := readLine(f, "-hash-password")
	restore()
	fmt.Fprintln(stderr)
	return line, err
}
