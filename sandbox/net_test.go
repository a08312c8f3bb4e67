package sandbox_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// netRig is a rig with the network on, or a skip where the network is
// refused (saying why).
func netRig(t *testing.T) *rig {
	t.Helper()
	sandboxtest.Network(t)
	return newRig(t, sandbox.Config{Network: true})
}

// listener listens on addr until the test ends and counts what it accepts.
func listener(t *testing.T, addr string) (net.Listener, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, answer(ln, "the host's service answered\n")
}

// answer writes reply to every connection ln accepts, until ln is closed,
// and counts them.
func answer(ln net.Listener, reply string) *atomic.Int32 {
	n := new(atomic.Int32)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			io.WriteString(c, reply)
			c.Close()
		}
	}()
	return n
}

// tcpProbe is a bash line that tries a TCP connection to host:port for at most
// 3 s and prints "reached", "refused" or "hung" with the address.
func tcpProbe(host, port string) string {
	return fmt.Sprintf(`if timeout 3 bash -c 'exec 3<>/dev/tcp/%[1]s/%[2]s && head -1 <&3' 2>/dev/null; then echo "reached %[1]s"; elif [ $? = 124 ]; then echo "hung %[1]s"; else echo "refused %[1]s"; fi`+"\n", host, port)
}

// The attacker's way to the host's own services with the network on: the
// host's loopback (v4 and v6), the helper's gateway (which a user-mode
// stack maps to the host's loopback unless told not to), and each of the
// host's own addresses, where a service listening on every address
// answers. None connects, and none hangs either.
func TestNetworkOnReachesNoneOfTheHostsServices(t *testing.T) {
	r := netRig(t)
	var script strings.Builder
	var targets []string
	counts := map[string]*atomic.Int32{}
	add := func(listen, host string) {
		ln, n := listener(t, listen)
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		script.WriteString(tcpProbe(host, port))
		targets = append(targets, host)
		counts[host] = n
	}
	add("127.0.0.1:0", "127.0.0.1")
	add("127.0.0.1:0", "10.0.2.2")
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		ln.Close()
		add("[::1]:0", "::1")
	}
	// A service on every address, reached through each of the host's own.
	all, n := listener(t, ":0")
	_, allPort, _ := net.SplitHostPort(all.Addr().String())
	for _, ip := range sandboxtest.HostAddrs(t) {
		script.WriteString(tcpProbe(ip.String(), allPort))
		targets = append(targets, ip.String())
		counts[ip.String()] = n
	}
	if len(targets) < 4 {
		t.Fatal("the host has no non-loopback address to try")
	}
	start := time.Now()
	out, _ := r.run(t, script.String())
	took := time.Since(start)
	for _, h := range targets {
		if !strings.Contains(out, "refused "+h+"\n") {
			t.Errorf("%s: want refused:\n%s", h, out)
		}
		if counts[h].Load() > 0 {
			t.Errorf("the host's service on %s accepted a connection from the sandbox", h)
		}
	}
	if strings.Contains(out, "answered") {
		t.Errorf("a host service answered the sandbox:\n%s", out)
	}
	if took > 10*time.Second {
		t.Errorf("the refusals took %v: a connection hung", took)
	}
}

// With the network on, a machine outside this host is reachable; this
// host's own address on the way there is not, nor is the neighbour on the
// network the host is directly on (its LAN segment, or the other
// containers of a compose network: the database), nor IPv4's link-local
// range (a cloud's metadata service).
func TestNetworkOnReachesTheOutside(t *testing.T) {
	r := netRig(t)
	o := sandboxtest.Outside(t)
	ln := o.Listen(t)
	answer(ln, "hello from outside\n")
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	hostSide, hostCount := listener(t, o.HostAddr+":0")
	_, hostPort, _ := net.SplitHostPort(hostSide.Addr().String())
	out, _ := r.run(t, tcpProbe(o.Addr, port)+tcpProbe(o.HostAddr, hostPort)+tcpProbe(o.Peer, port)+tcpProbe("169.254.169.254", "80"))
	if !strings.Contains(out, "hello from outside\nreached "+o.Addr) {
		t.Errorf("the outside host was not reached:\n%s", out)
	}
	if !strings.Contains(out, "refused "+o.HostAddr) || hostCount.Load() > 0 {
		t.Errorf("this host's own address on the veth was reached:\n%s", out)
	}
	if !strings.Contains(out, "refused "+o.Peer) {
		t.Errorf("a neighbour on the host's own network was reached:\n%s", out)
	}
	if !strings.Contains(out, "refused 169.254.169.254") {
		t.Errorf("the link-local range (metadata services) is routed:\n%s", out)
	}
}

// Names resolve through the helper's DNS forwarder: the sandbox's
// resolv.conf names it alone (keeping the host's search and options).
func TestNetworkOnResolvesThroughTheHelper(t *testing.T) {
	r := netRig(t)
	out, _ := r.run(t, `cat /etc/resolv.conf`)
	if !strings.HasPrefix(out, "nameserver 10.0.2.3\n") || strings.Count(out, "nameserver") != 1 {
		t.Errorf("resolv.conf does not name the helper's forwarder alone:\n%s", out)
	}
}

// A name resolves through the helper, end to end, where the host's resolver
// listens on its loopback (systemd-resolved's 127.0.0.53), which the sandbox
// itself cannot reach: this test binary runs again in a mount namespace
// whose /etc/resolv.conf names a DNS server on a 127.x address (the helper
// asks the resolvers of the bot's /etc/resolv.conf); it answers every name
// with an outside host's address, which the sandbox then reaches by name.
func TestNetworkOnNamesResolveEndToEnd(t *testing.T) {
	if target := os.Getenv("THREADSMITH_TEST_DNS_TARGET"); target != "" {
		r := netRig(t)
		out, _ := r.run(t, "getent ahostsv4 outside.test | head -1; curl -sS -m 5 http://outside.test:"+target+"/")
		if !strings.Contains(out, "hello from outside") {
			t.Fatalf("the outside host was not reached by name:\n%s", out)
		}
		return
	}
	sandboxtest.Network(t)
	o := sandboxtest.Outside(t)
	ln := o.Listen(t)
	answer(ln, "HTTP/1.0 200 OK\r\n\r\nhello from outside\n")
	resolver := fmt.Sprintf("127.77.%d.%d", os.Getpid()>>8&255, os.Getpid()&255|1)
	dns, err := net.ListenPacket("udp", resolver+":53")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	asked := make(chan string, 16)
	go serveDNS(dns, net.ParseIP(o.Addr).To4(), asked)
	conf := t.TempDir() + "/resolv.conf"
	if err := os.WriteFile(conf, []byte("nameserver "+resolver+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	cmd := exec.CommandContext(t.Context(), "unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`,
		conf, os.Args[0], "-test.run", "^TestNetworkOnNamesResolveEndToEnd$", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "THREADSMITH_TEST_DNS_TARGET="+port)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestNetworkOnNamesResolveEndToEnd") {
		t.Fatalf("the sandbox did not resolve and reach outside.test: %v\n%s", err, out)
	}
	select {
	case name := <-asked:
		if !strings.Contains(name, "outside") {
			t.Errorf("the DNS server was asked for %q", name)
		}
	default:
		t.Error("the DNS server was never asked")
	}
}

// serveDNS answers every query on pc with one A record, addr, and tells
// asked the first label of each question.
func serveDNS(pc net.PacketConn, addr net.IP, asked chan<- string) {
	b := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(b)
		if err != nil {
			return
		}
		q := b[:n]
		if n < 17 {
			continue
		}
		end := 12
		for end < n && q[end] != 0 {
			end += int(q[end]) + 1
		}
		end += 5 // the root label, type and class
		if end > n {
			continue
		}
		select {
		case asked <- string(q[13 : 13+int(q[12])]):
		default:
		}
		resp := append([]byte{}, q[:2]...)
		resp = append(resp, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0)
		resp = append(resp, q[12:end]...)
		if q[end-4] == 0 && q[end-3] == 1 { // type A: one answer
			resp[7] = 1
			resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
			resp = append(resp, addr...)
		}
		pc.WriteTo(resp, from)
	}
}

// The command cannot undo the unreachable routes: it has no CAP_NET_ADMIN
// over its network namespace.
func TestNetworkOnRoutesAreTheInitsNotTheCommands(t *testing.T) {
	r := netRig(t)
	var host string
	for _, ip := range sandboxtest.HostAddrs(t) {
		if ip.To4() != nil {
			host = ip.String()
		}
	}
	if host == "" {
		t.Skip("the host has no IPv4 address besides loopback")
	}
	if _, err := os.Stat("/usr/sbin/ip"); err != nil {
		t.Skip("the attack needs iproute2's /usr/sbin/ip")
	}
	out, _ := r.run(t, fmt.Sprintf(`PATH=$PATH:/usr/sbin; ip route del unreachable %[1]s 2>&1; ip route replace %[1]s via 10.0.2.2 2>&1; ip route show table all | grep -c "unreachable %[1]s"`, host))
	if !strings.Contains(out, "Operation not permitted") || !strings.HasSuffix(strings.TrimSpace(out), "1") {
		t.Errorf("the command changed the sandbox's routes, or the route is missing:\n%s", out)
	}
}
