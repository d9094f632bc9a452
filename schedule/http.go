package schedule

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/BurntSushi/toml"
)

// HTTP is the [http] table: the listener that serves /metrics and /healthz.
type HTTP struct {
	// Listen is the host:port to listen on (key listen). Empty, the
	// default, starts no listener. The daemon's -http flag overrides it.
	Listen string
}

// CheckListen checks a listen address (host:port, the host an IP address or
// a name, the port 0 to 65535, 0 for any free one, which the daemon logs)
// and reports whether it reaches beyond the loopback interface: an empty
// host (every interface), an address that is not a loopback one, or a name
// other than localhost.
func CheckListen(addr string) (public bool, err error) {
	if addr == "" {
		return false, errors.New("empty address: want host:port, such as 127.0.0.1:9464")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%q is not host:port, such as 127.0.0.1:9464", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return false, fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	if host == "" {
		return true, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return !ip.IsLoopback(), nil
	}
	if host == "localhost" {
		return false, nil
	}
	if !validHostname(host) {
		return false, fmt.Errorf("%q: %q is neither an IP address nor a host name", addr, host)
	}
	return true, nil
}

func validHostname(h string) bool {
	if len(h) > 253 {
		return false
	}
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
		default:
			return false
		}
	}
	return true
}

// loadHTTP decodes the [http] table into cfg.HTTP. An address beyond the
// loopback interface loads, since it was written on purpose, with a
// warning: the metrics name every schedule and task.
func (l *loader) loadHTTP(p toml.Primitive, cfg *Config) {
	w := where{table: "http", path: []string{"http"}}
	var raw rawHTTP
	if !l.decode(p, &raw, w) {
		return
	}
	var addr string
	lw := w.with("listen")
	if !l.decode(raw.Listen, &addr, lw) {
		return
	}
	public, err := CheckListen(addr)
	if err != nil {
		l.add(lw, err)
		return
	}
	cfg.HTTP.Listen = addr
	if public {
		line := 0
		if l.loc != nil {
			line = l.loc.line(lw.path...)
		}
		cfg.Warnings = append(cfg.Warnings, &ConfigError{File: l.file, Line: line, Table: "http", Field: "listen",
			Err: fmt.Errorf("%s listens beyond the loopback interface: anyone who reaches it reads the metrics", addr)})
	}
}
