//go:build unix && !linux

package tasks

import "errors"

// waitExited reports that waiting for an exit without reaping is not
// available here; the caller reaps first and kills the group after.
func waitExited(int) error { return errors.ErrUnsupported }
