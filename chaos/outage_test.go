package chaos

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// tcpProxy forwards the connections it accepts on a loopback port to
// target. Stopping it closes the port and every connection, as a database
// server that went away; starting it again listens on the same port.
type tcpProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to target.
func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	p := &tcpProxy{t: t, target: target, addr: "127.0.0.1:0", conns: map[net.Conn]bool{}}
	p.start()
	t.Cleanup(func() {
		p.stop()
		p.wg.Wait()
	})
	return p
}

// start listens on the proxy's port (a free one the first time).
func (p *tcpProxy) start() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy listen %s: %v", p.addr, err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.forward(c)
		}
	})
}

// forward copies c to a new connection to the target and back, until
// either side closes or the proxy stops.
func (p *tcpProxy) forward(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	done := func() {
		c.Close()
		s.Close()
		p.mu.Lock()
		delete(p.conns, c)
		delete(p.conns, s)
		p.mu.Unlock()
	}
	p.wg.Go(func() { io.Copy(s, c); done() })
	p.wg.Go(func() { io.Copy(c, s); done() })
}

// stop closes the port and every connection through it.
func (p *tcpProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// outageConfig is due every second, runs no late instant, and counts an
// instant as on time for 10 s.
const outageConfig = `
[scheduler]
misfire_grace = "10s"

[tasks.t]
command = ["true"]

[[schedule]]
name = "tick"
cron = "* * * * * *"
task = "t"
catch_up = "none"
`

// TestPostgresOutageWithinGrace stops the PostgreSQL server under a daemon
// (a proxy in front of it closes) for 8 s, shorter than misfire_grace, and
// starts it again: the beat resumes as soon as the server answers and
// every instant of the outage runs; none is recorded as a misfire.
func TestPostgresOutageWithinGrace(t *testing.T) {
	t.Parallel()
	dsn := pgSchema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr
	s := newSite(t, outageConfig)
	s.db = u.String()
	db := openPG(t, dsn)
	instants := func() map[int64]bool {
		m := map[int64]bool{}
		for _, j := range loadPostgres(t, db).jobs {
			if j.Schedule == "tick" {
				m[j.ScheduledAt] = true
			}
		}
		return m
	}

	d := s.start()
	eventually(t, "instants before the outage", func() bool { return len(instants()) >= 2 })
	down := time.Now()
	proxy.stop()
	d.waitFor("a failed pass", func() bool {
		return d.msgs["beat pass failed: database unreachable"]+d.msgs["beat pass failed"] > 0
	})
	time.Sleep(time.Until(down.Add(8 * time.Second))) // the outage's length, the scenario under test
	proxy.start()
	up := time.Now()
	eventually(t, "instants after the outage", func() bool {
		for at := range instants() {
			if time.UnixMilli(at).After(up.Add(2 * time.Second)) {
				return true
			}
		}
		return false
	})

	if es := d.entries("database answers again: beat resumes"); len(es) > 0 {
		if at, err := time.Parse(time.RFC3339Nano, es[0]["time"].(string)); err == nil {
			t.Logf("the beat resumed %v after the server came back", at.Sub(up).Round(100*time.Millisecond))
		}
	}
	got := instants()
	for at := down.Truncate(time.Second).Add(time.Second); !at.After(up); at = at.Add(time.Second) {
		if !got[at.UnixMilli()] {
			t.Errorf("no job for the instant %s, due during the outage", at.UTC().Format(time.RFC3339))
		}
	}
	for _, sk := range loadPostgres(t, db).skips {
		t.Errorf("skip recorded: %+v; want none, the outage was shorter than misfire_grace", sk)
	}
	if d.exited() {
		t.Errorf("the daemon exited during the outage: %v", d.err)
	}
}
