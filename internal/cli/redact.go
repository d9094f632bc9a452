package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// printRedaction lists, for -check, the tasks that mask secrets: the
// payload fields shown as [redacted] and the patterns masked in their
// output and errors; nothing when no task has any.
func printRedaction(out io.Writer, cfg *config.Config) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	header := false
	for _, name := range taskNames(cfg) {
		t := cfg.Tasks[name]
		if len(t.Redact) == 0 && len(t.RedactOutput) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "TASK\tREDACTED FIELDS\tREDACTED OUTPUT\n")
			header = true
		}
		patterns := make([]string, len(t.RedactOutput))
		for i, p := range t.RedactOutput {
			patterns[i] = strconv.Quote(p)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", name, orDash(strings.Join(t.Redact, ", ")), orDash(strings.Join(patterns, ", ")))
	}
	w.Flush()
}
