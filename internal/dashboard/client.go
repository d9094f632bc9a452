package dashboard

import (
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/scheduler-run/scheduler/schedule/config"
)

// clients tells where a request comes from and whether it names this
// dashboard. It is read only after NewAuth.
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

// addr is the request's address without port: the peer, or, behind a
// trusted proxy, the right-most X-Forwarded-For (else Forwarded) hop that
// is not a trusted proxy; hops left of it may be forged. An entry that is
// not an address stops the walk at the trusted hop that wrote it.
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

// forwardedFor returns the hops in the headers' values, split at sep and,
// with param, taken from that parameter (Forwarded: for=192.0.2.7).
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

// parseHop parses an address, with or without port or IPv6 brackets.
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

// hostAllowed reports whether the Host names this dashboard: an IP
// address, localhost, the listen name or one of [http] hosts. A page whose
// name was rebound to this address sends that name, and is refused.
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

// normalHost lower-cases h and drops IPv6 brackets and a trailing dot.
func normalHost(h string) string {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
	}
	return h
}

// Clients is the dashboard's view of where a request comes from and of
// its Host, for the JSON API on the same listener: the same [http] hosts,
// listen name and trusted_proxies decide for both.
type Clients struct{ c clients }

// NewClients returns the Clients of h.
func NewClients(h config.HTTPSettings) Clients { return Clients{newClients(h)} }

// Addr is the request's address without port, as the dashboard logs it.
func (c Clients) Addr(r *http.Request) string { return c.c.addr(r) }

// HostAllowed reports whether the request's Host names this server: an IP
// address, localhost, the listen name or one of [http] hosts.
func (c Clients) HostAllowed(r *http.Request) bool { return c.c.hostAllowed(r) }
