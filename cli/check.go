package cli

import (
	"fmt"
	"os"

	"scheduler/schedule"
)

// checkCommands reports, for -check, the command tasks whose program the
// daemon could not start from here: the working directory and PATH of this
// process, which under systemd are the unit's (ExecStartPre= runs with
// ExecStart='s settings). Warnings are printed and do not fail the check.
func (a *app) checkCommands() error {
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	errs, warnings := schedule.CheckCommands(a.cfg, schedule.CommandEnv{Dir: wd, Path: getenv("PATH")})
	for _, w := range warnings {
		fmt.Fprintln(a.stderr, "warning:", w)
	}
	if len(errs) > 0 {
		printConfigErrors(a.stderr, errs, "")
		return &usageError{ErrReported}
	}
	return nil
}
