package dashboard

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// clients tells where a request comes from and whether it names this
// dashboard: the proxies trusted to say who their client is, and the
// names the dashboard answers to. It is read only after NewAuth.
type clients struct {
	proxies []netip.Prefix
	hosts   map[string]bool // lower case, besides localhost and IP addresses
}

func newClients(h config.HTTPSettings) clients {
	c := clients{proxies: h.TrustedProxies, hosts: map[string]bool{}}
	for _, name := range h.Hosts {
		c.hosts[normalHost(name)] = true
	}
	if host, _, err := net.SplitHostPort(h.Listen); err == nil && host != "" {
		if _, err := netip.ParseAddr(host); err != nil {
			c.hosts[normalHost(host)] = true // listen = "name:port"
		}
	}
	return c
}

// trusted reports whether ip is one of the trusted proxies.
func (c clients) trusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range c.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// addr is the address the request comes from, without its port: the
// connection's peer, or, when the peer is a trusted proxy, the client the
// proxies name. In X-Forwarded-For, else Forwarded, each proxy appends
// the address it was reached from: the client is the right-most address
// that is not itself a trusted proxy, since what stands left of it came
// from the client and may be forged. An entry that is not an address
// (unknown, a hidden name) stops the walk at the trusted hop that wrote it.
func (c clients) addr(r *http.Request) string {
	peer := r.RemoteAddr
	if host, _, err := net.SplitHostPort(peer); err == nil {
		peer = host
	}
	ip, err := netip.ParseAddr(peer)
	if err != nil || len(c.proxies) == 0 || !c.trusted(ip) {
		return peer
	}
	chain := forwardedFor(r.Header.Values("X-Forwarded-For"), ",", "")
	if len(chain) == 0 {
		chain = forwardedFor(r.Header.Values("Forwarded"), ",", "for=")
	}
	client := ip
	for i := len(chain) - 1; i >= 0; i-- {
		hop, ok := parseHop(chain[i])
		if !ok {
			break
		}
		client = hop
		if !c.trusted(hop) {
			break
		}
	}
	return client.String()
}

// forwardedFor returns the hops of the headers' values, in order: each
// value split at sep, and, with param, the value of that parameter of each
// element (Forwarded: for=192.0.2.7;proto=https, for="[2001:db8::1]:443").
func forwardedFor(values []string, sep, param string) []string {
	var hops []string
	for _, v := range values {
		for _, elem := range strings.Split(v, sep) {
			if param == "" {
				hops = append(hops, strings.TrimSpace(elem))
				continue
			}
			for _, pair := range strings.Split(elem, ";") {
				pair = strings.TrimSpace(pair)
				if len(pair) > len(param) && strings.EqualFold(pair[:len(param)], param) {
					hops = append(hops, strings.Trim(pair[len(param):], `"`))
				}
			}
		}
	}
	return hops
}

// parseHop parses one hop: an address, with or without a port, IPv6 with
// or without brackets.
func parseHop(s string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")); err == nil {
		return ip.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

// hostAllowed reports whether the request's Host names this dashboard:
// an IP address, localhost, the listen address's name or one of [http]
// hosts, with any port. A page whose own name was rebound to this address
// sends its own name, and is refused; an address typed as such cannot be
// rebound.
func (c clients) hostAllowed(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = normalHost(host)
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return host == "localhost" || c.hosts[host]
}

// normalHost is a host name as compared: lower case, without the brackets
// of an IPv6 address or the dot that ends a fully qualified name.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}
