package daemon

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// notifier speaks systemd's sd_notify protocol to NOTIFY_SOCKET. Its
// zero value (no socket) does nothing.
type notifier struct {
	addr *net.UnixAddr
}

// newNotifier reads NOTIFY_SOCKET; a leading '@' is the abstract namespace.
func newNotifier(env func(string) string) notifier {
	name := env("NOTIFY_SOCKET")
	if name == "" {
		return notifier{}
	}
	if strings.HasPrefix(name, "@") {
		name = "\x00" + name[1:]
	}
	return notifier{addr: &net.UnixAddr{Name: name, Net: "unixgram"}}
}

// notify sends state; it returns nil when there is no socket.
func (n notifier) notify(state string) error {
	if n.addr == nil {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, n.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.Write([]byte(state))
	return err
}

// watchdogInterval returns half of WATCHDOG_USEC, or 0 when no watchdog is
// asked for or WATCHDOG_PID names another process.
func watchdogInterval(env func(string) string) (time.Duration, error) {
	usec := env("WATCHDOG_USEC")
	if usec == "" {
		return 0, nil
	}
	if pid := env("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0, nil
	}
	n, err := strconv.ParseInt(usec, 10, 64)
	if err != nil || n <= 0 {
		return 0, errors.New("WATCHDOG_USEC is not a positive number")
	}
	return time.Duration(n) * time.Microsecond / 2, nil
}

// CheckEnv reports an environment that would fail the daemon's start: a
// WATCHDOG_USEC that is not a positive number.
func CheckEnv(getenv func(string) string) error {
	_, err := watchdogInterval(getenv)
	return err
}

// notifyOrLog sends state to systemd, logging a failure.
func notifyOrLog(log interface{ Warn(string, ...any) }, n notifier, state string) {
	if err := n.notify(state); err != nil {
		log.Warn("sd_notify failed", "err", err)
	}
}
