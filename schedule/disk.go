package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/scheduler-run/scheduler/queue/store"
	"github.com/scheduler-run/scheduler/schedule/config"
)

// DiskCheck is how the config file on disk stands against the configs the
// live daemons run.
type DiskCheck struct {
	File   string
	SHA256 string // of the file's bytes; "" when it cannot be read
	// Err is why the file does not load (it cannot be read, or config
	// errors); nil when it loads.
	Err error
	// Running are the distinct configs the live daemons run, hex SHA-256,
	// sorted; empty when none records one.
	Running []string
}

// CheckDisk reads the config file at path and compares it with a, the
// configs the live daemons run. A file whose bytes a daemon runs is not
// parsed again: that daemon loaded it.
func CheckDisk(path string, a Agreement) DiskCheck {
	d := DiskCheck{File: path}
	for _, dc := range a.Daemons {
		if dc.Config != "" && !slices.Contains(d.Running, dc.Config) {
			d.Running = append(d.Running, dc.Config)
		}
	}
	slices.Sort(d.Running)
	data, err := config.ReadFile(path)
	if err != nil {
		d.Err = err
		return d
	}
	d.SHA256 = store.ConfigSHA256(data)
	if !slices.Contains(d.Running, d.SHA256) {
		_, d.Err = config.Parse(path, data)
	}
	return d
}

// Differs reports whether the file loads but some live daemon runs
// another config.
func (d DiskCheck) Differs() bool {
	return d.Err == nil && len(d.Running) > 0 && (len(d.Running) > 1 || d.Running[0] != d.SHA256)
}

// Warning says what is wrong with the file on disk and what to do, or ""
// when it loads and every live daemon runs it.
func (d DiskCheck) Warning() string {
	running := "the config they loaded"
	if len(d.Running) > 0 {
		short := make([]string, len(d.Running))
		for i, s := range d.Running {
			short[i] = shortSHA(s)
		}
		running = "the config they loaded (sha256 " + strings.Join(short, ", ") + ")"
	}
	if d.Err != nil {
		first := d.Err
		if es, ok := errors.AsType[config.Errors](d.Err); ok && len(es) > 0 {
			first = es[0]
		}
		return fmt.Sprintf("The config file %s does not load: %v. The daemons keep running %s. Run scheduler -check to see every problem, fix the file, then reload the daemons (systemctl reload, or SIGHUP).",
			d.File, first, running)
	}
	if d.Differs() {
		return fmt.Sprintf("The config file %s (sha256 %s) is not what the daemons run: they run %s. Run scheduler -check, then reload the daemons (systemctl reload, or SIGHUP) to apply it.",
			d.File, shortSHA(d.SHA256), running)
	}
	return ""
}
