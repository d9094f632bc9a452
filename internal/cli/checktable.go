package cli

import (
	"bufio"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// printScheduleTable prints -check's table of schedules, one row each,
// aligned as a tabwriter with padding 2 aligns it. A tabwriter holds every
// cell until its Flush; with a hundred thousand schedules that is most of
// -check's memory, so the widths are measured in a first pass over the
// schedules and the rows are written in a second.
func printScheduleTable(out io.Writer, schedules []*config.Schedule, now time.Time) error {
	header := [...]string{"SCHEDULE", "CRON", "ZONE", "TASK", "ITEMS", "NEXT RUN"}
	var widths [len(header) - 1]int
	measure := func(cells []string) {
		for i := range widths {
			widths[i] = max(widths[i], utf8.RuneCountInString(cells[i]))
		}
	}
	measure(header[:])
	var cells [len(header)]string
	for _, s := range schedules {
		measure(scheduleCells(cells[:], s, time.Time{}))
	}
	w := bufio.NewWriter(out)
	row := func(cells []string) {
		for i, c := range cells {
			w.WriteString(c)
			if i < len(widths) {
				w.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		w.WriteByte('\n')
	}
	row(header[:])
	for _, s := range schedules {
		row(scheduleCells(cells[:], s, now))
	}
	return w.Flush()
}

// scheduleCells fills cells with s's row; a zero now leaves out the next
// run, which the widths do not need.
func scheduleCells(cells []string, s *config.Schedule, now time.Time) []string {
	cells[0], cells[1], cells[2], cells[3] = s.Name, s.Cron, s.Location.String(), s.Task
	cells[4] = strconv.Itoa(len(s.Items()))
	cells[5] = ""
	if !now.IsZero() {
		cells[5] = rfc3339(s.Next(now), s.Location)
	}
	return cells
}
