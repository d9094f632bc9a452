package cli

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"

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

// printHTTP says, for -check, what the [http] listener serves and to whom:
// the listen address, the dashboard's login and actions, the host names it
// answers to and the proxies whose X-Forwarded-For it reads; nothing when
// [http] sets none of them.
func printHTTP(out io.Writer, h schedule.HTTP) {
	if h.Listen == "" && len(h.Hosts) == 0 && len(h.TrustedProxies) == 0 {
		return
	}
	listen := h.Listen
	if listen == "" {
		listen = "none (-http sets one)"
	}
	dash := "off"
	if h.Dashboard {
		var who []string
		if !h.TokenHash.IsZero() {
			who = append(who, schedule.TokenUser)
		}
		for _, u := range h.Users {
			who = append(who, u.Name)
		}
		dash = "read without login"
		if len(who) > 0 {
			dash = "login as " + strings.Join(who, ", ")
		}
		if h.Actions {
			dash += ", actions on"
		}
	}
	fmt.Fprintf(out, "http listen: %s; dashboard: %s\n", listen, dash)
	if h.Dashboard {
		hosts := []string{"localhost", "IP addresses"}
		if host, _, err := net.SplitHostPort(h.Listen); err == nil && host != "" && host != "localhost" && net.ParseIP(host) == nil {
			hosts = append(hosts, host)
		}
		fmt.Fprintf(out, "http hosts: %s\n", strings.Join(append(hosts, h.Hosts...), ", "))
	}
	if len(h.TrustedProxies) > 0 {
		ps := make([]string, len(h.TrustedProxies))
		for i, p := range h.TrustedProxies {
			ps[i] = p.String()
			if p.IsSingleIP() {
				ps[i] = p.Addr().String()
			}
		}
		fmt.Fprintf(out, "http trusted proxies: %s (the client is read from X-Forwarded-For or Forwarded)\n", strings.Join(ps, ", "))
	}
}
