package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// Error is one problem of a configuration file.
type Error struct {
	File string // as given to Load or Parse
	Line int    // 1-based; 0 when unknown
	// Table is "scheduler", "task", "schedule", "http" or "pool"; empty
	// for the whole file.
	Table string
	// Job names the task or schedule; a schedule without a usable name is
	// "#N", its 1-based position.
	Job string
	// Field is the key, such as "cron"; empty for a whole table.
	Field string
	Err   error
}

// Error formats e as file:line: schedule "name": field cron: problem.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	switch {
	case e.Table != "" && strings.HasPrefix(e.Job, "#"):
		fmt.Fprintf(&b, "%s %s: ", e.Table, e.Job)
	case e.Table != "" && e.Job != "":
		fmt.Fprintf(&b, "%s %q: ", e.Table, e.Job)
	case e.Table != "":
		fmt.Fprintf(&b, "%s: ", e.Table)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying problem.
func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem of a file, in line order, as Load returns it.
type Errors []*Error

// Error lists the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.As and errors.Is.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// MaxErrors is how many problems Load reports before it stops decoding.
const MaxErrors = 100

// ErrTooManyProblems is wrapped by the note ending a list cut at MaxErrors.
var ErrTooManyProblems = errors.New("too many problems")

// lineOrder puts problems without a line last.
func lineOrder(line int) int {
	if line == 0 {
		return int(^uint(0) >> 1)
	}
	return line
}

// syntaxError is a TOML syntax error; the line is in Error.
type syntaxError struct{ pe toml.ParseError }

func (e *syntaxError) Error() string { return e.pe.Message }

func (e *syntaxError) Unwrap() error { return e.pe }
