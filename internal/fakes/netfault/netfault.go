// Package netfault puts a real TCP proxy (Shopify's toxiproxy, run in
// process on 127.0.0.1) between the program under test and one upstream —
// a fake platform, the fake LLM, a git remote, PostgreSQL — so that a test
// injects the faults of a network: the upstream down (connections refused),
// every open connection cut, a half-open connection (no data, no close), a
// slow link. The program connects to Addr instead of the upstream and knows
// nothing of the proxy.
package netfault

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

func init() {
	// Toxics log through zerolog's global logger: only its errors reach
	// the test's output.
	zerolog.SetGlobalLevel(zerolog.ErrorLevel)
}

var (
	serverOnce sync.Once
	server     *toxiproxy.ApiServer
)

// apiServer is the one in-process toxiproxy server every Proxy belongs to
// (its HTTP API is never started).
func apiServer() *toxiproxy.ApiServer {
	serverOnce.Do(func() {
		server = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	})
	return server
}

// Proxy is one proxy, listening on a fixed 127.0.0.1 port for its whole
// life (Down and Up keep the port).
type Proxy struct {
	p    *toxiproxy.Proxy
	addr string
	mu   sync.Mutex
	down bool
}

// New starts a proxy to upstream (host:port) on a free port of 127.0.0.1
// (see Start); it is stopped when the test ends.
func New(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	p, err := Start(upstream)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// Start is New without a test: the caller calls Close.
//
// The proxy listens on a port below the kernel's ephemeral range: Down,
// Up and Cut close its listener and open it again on the same port, and a
// port of the ephemeral range may meanwhile become the local end of any
// outgoing connection on the machine (the program's own reconnects), which
// makes listening there fail. Below the range only a listener that asks
// for the port by number can take it.
func Start(upstream string) (*Proxy, error) {
	name := fmt.Sprintf("netfault-%s", upstream)
	low := ephemeralLow()
	var err error
	for range 50 {
		port := fixedPortMin + rand.IntN(low-fixedPortMin)
		p := toxiproxy.NewProxy(apiServer(), name, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), upstream)
		if err = p.Start(); err == nil {
			return &Proxy{p: p, addr: p.Listen}, nil
		}
	}
	return nil, fmt.Errorf("netfault: starting a proxy to %s: %w", upstream, err)
}

// fixedPortMin is the lowest port a proxy listens on: above the ports
// services are usually configured on.
const fixedPortMin = 20000

// ephemeralLow is the first port of the kernel's range for the local end of
// outgoing connections (Linux's ip_local_port_range; 32768 by default).
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > fixedPortMin+1000 {
				low = n
			}
		}
	}
	return low
}

// Addr is where the program under test connects instead of the upstream.
func (p *Proxy) Addr() string { return p.addr }

// URL returns u (an http, https, ws, wss or postgres URL of the upstream)
// with its host:port replaced by the proxy's.
func (p *Proxy) URL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		panic(fmt.Sprintf("netfault: URL %q: %v", u, err))
	}
	parsed.Host = p.addr
	return parsed.String()
}

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.p.Upstream }

// Down makes the upstream unreachable: open connections are closed and new
// ones refused, until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.p.Stop()
}

// Up ends Down: the proxy accepts connections again on the same port.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down {
		return nil
	}
	// The port was free a moment ago and is outside the ephemeral range; a
	// listener of someone else's that took it meanwhile is an error the
	// test reports.
	if err := p.reopen(); err != nil {
		return fmt.Errorf("netfault: reopening %s: %w", p.addr, err)
	}
	p.down = false
	return nil
}

// reopen listens on the proxy's port again. The port the listener just
// closed can stay taken for a moment (the kernel answers "address already
// in use"): it tries again for up to two seconds.
func (p *Proxy) reopen() error {
	var err error
	for range 100 {
		if err = p.p.Start(); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Cut closes every open connection at once (as a network that drops them
// does, seen from both ends as a closed connection) and goes on accepting
// new ones.
func (p *Proxy) Cut() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return nil
	}
	p.p.Stop()
	if err := p.reopen(); err != nil {
		p.down = true
		return fmt.Errorf("netfault: reopening %s after a cut: %w", p.addr, err)
	}
	return nil
}

// HalfOpen stops all data both ways on open and new connections without
// closing them: neither end hears of it (no FIN, no RST) until its own
// timeout. Heal ends it.
func (p *Proxy) HalfOpen() error {
	for _, dir := range []string{"upstream", "downstream"} {
		if err := p.add("halfopen_"+dir, "timeout", dir, `{"timeout":0}`); err != nil {
			return err
		}
	}
	return nil
}

// Latency delays every chunk of data from the upstream by ms milliseconds.
func (p *Proxy) Latency(ms int) error {
	return p.add("latency_downstream", "latency", "downstream", fmt.Sprintf(`{"latency":%d}`, ms))
}

// Trickle cuts what the upstream sends into pieces of about size bytes and
// passes one every delayMS milliseconds: a link (or a server) that answers
// at a fixed, slow pace, as a model answering one token a second.
func (p *Proxy) Trickle(size, delayMS int) error {
	return p.add("trickle_downstream", "slicer", "downstream",
		fmt.Sprintf(`{"average_size":%d,"size_variation":0,"delay":%d}`, size, delayMS*1000))
}

// Heal removes every toxic (HalfOpen, Latency, Trickle); data flows again on
// the connections that were held.
func (p *Proxy) Heal() {
	p.p.Toxics.ResetToxics(context.Background())
}

// Close stops the proxy for good.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	p.p.Stop()
}

func (p *Proxy) add(name, typ, stream, attrs string) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":%s}`, name, typ, stream, attrs)
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("netfault: adding %s to %s: %w", typ, p.addr, err)
	}
	return nil
}

// HostPort returns the host:port of a URL (for New's upstream).
func HostPort(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		panic(fmt.Sprintf("netfault: URL %q: %v", u, err))
	}
	if parsed.Port() == "" {
		panic(fmt.Sprintf("netfault: URL %q has no port", u))
	}
	return net.JoinHostPort(parsed.Hostname(), parsed.Port())
}
