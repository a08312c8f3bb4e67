package sandboxtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/threadsmith/threadsmith/sandbox"
)

// Network checks that a sandbox with the network on can be had here. Where
// New refuses it (no slirp4netns, or a /dev/net/tun the bot's user may not
// open), the refusal must say what is missing; the test then skips, except
// as root under THREADSMITH_REQUIRE_SANDBOX, where CI installs what it
// needs.
func Network(t testing.TB) {
	t.Helper()
	_, err := sandbox.New(sandbox.Config{Network: true})
	if err == nil {
		return
	}
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "sandbox.network:") {
		t.Fatalf("New with the network on: %v", err)
	}
	if !strings.Contains(err.Error(), "slirp4netns") && !strings.Contains(err.Error(), "/dev/net/tun") {
		t.Fatalf("the refusal does not say what is missing: %v", err)
	}
	if os.Getuid() == 0 && os.Getenv("THREADSMITH_REQUIRE_SANDBOX") != "" {
		t.Fatalf("the network must work for a root bot here: %v", err)
	}
	t.Skipf("the network is refused here, as it must be: %v", err)
}

// OutsideHost is a machine of the outside world for tests of a sandbox with
// the network on: a network namespace of its own, joined to this host's by
// a veth pair, and reached through the pair's other end as through a
// router, so that it is neither this host's loopback, nor one of its
// addresses, nor on a network this host is directly on.
type OutsideHost struct {
	// Addr is the outside host's address, behind Peer.
	Addr string
	// Peer is the veth pair's outside end: a neighbour on a network this
	// host is directly on (which a sandbox must not reach).
	Peer string
	// HostAddr is this host's address on the veth pair (one of the host's
	// own addresses, which a sandbox must not reach).
	HostAddr string
	ns       string
}

var outsideSeq atomic.Int32

// Outside makes an outside host until the test ends. It needs root and
// iproute2: without root the test skips saying why (the root run covers
// it); as root without `ip` it skips, or fails under
// THREADSMITH_REQUIRE_SANDBOX.
func Outside(t testing.TB) *OutsideHost {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("an outside host (a network namespace and a veth pair) needs root; the root run of the tests covers it")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		if os.Getenv("THREADSMITH_REQUIRE_SANDBOX") != "" {
			t.Fatal("an outside host needs iproute2's ip")
		}
		t.Skip("an outside host needs iproute2's ip (set THREADSMITH_REQUIRE_SANDBOX=1 to fail instead)")
	}
	// A /30 of 198.18.0.0/16 for the pair and an address of 198.19.0.0/16
	// (the benchmarking range) per outside host, so that test processes
	// running side by side do not collide.
	n := (os.Getpid()*8 + int(outsideSeq.Add(1))) % (1 << 14)
	pair := func(i int) string { return fmt.Sprintf("198.18.%d.%d", n>>6, (n&63)<<2+i) }
	o := &OutsideHost{Addr: fmt.Sprintf("198.19.%d.%d", n>>6, (n&63)<<2+1), Peer: pair(2), HostAddr: pair(1), ns: fmt.Sprintf("tsout-%d", n)}
	veth := fmt.Sprintf("tsv%d", n)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", o.ns)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", veth).Run() // its route goes with it
		_ = exec.Command("ip", "netns", "del", o.ns).Run()
	})
	run("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", o.ns)
	run("addr", "add", o.HostAddr+"/30", "dev", veth)
	run("link", "set", veth, "up")
	run("-n", o.ns, "addr", "add", o.Peer+"/30", "dev", "eth0")
	run("-n", o.ns, "addr", "add", o.Addr+"/32", "dev", "lo")
	run("-n", o.ns, "link", "set", "eth0", "up")
	run("-n", o.ns, "link", "set", "lo", "up")
	run("-n", o.ns, "route", "add", "default", "via", o.HostAddr)
	run("route", "add", o.Addr+"/32", "via", o.Peer, "dev", veth)
	return o
}

// outsideNet is where Outside puts its veth pairs and addresses.
var outsideNet = &net.IPNet{IP: net.IPv4(198, 18, 0, 0), Mask: net.CIDRMask(15, 32)}

// HostAddrs lists this host's own addresses that a sandbox with the network
// on must not reach: every non-loopback, non-link-local one, except the
// host's ends of outside hosts' veth pairs, which tests running side by side
// add and remove at any time.
func HostAddrs(t testing.TB) []net.IP {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || outsideNet.Contains(ipn.IP) {
			continue
		}
		out = append(out, ipn.IP)
	}
	return out
}

// Listen listens on every address of the outside host (port 0: any) until
// the test ends; its Addr is the listener's on o.Addr.
func (o *OutsideHost) Listen(t testing.TB) net.Listener {
	t.Helper()
	var ln net.Listener
	err := o.in(func() error {
		var err error
		ln, err = net.Listen("tcp4", ":0")
		return err
	})
	if err != nil {
		t.Fatalf("listening on the outside host: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return outsideListener{ln, &net.TCPAddr{IP: net.ParseIP(o.Addr), Port: ln.Addr().(*net.TCPAddr).Port}}
}

// outsideListener is a listener on every address that names o.Addr as its
// own.
type outsideListener struct {
	net.Listener
	addr net.Addr
}

func (l outsideListener) Addr() net.Addr { return l.addr }

// in runs f on a thread in the outside host's network namespace (a socket
// stays in the namespace it was made in). The thread is a new goroutine's,
// locked to it: should it fail to come back to the host's namespace, it
// ends with the goroutine and the runtime never reuses it.
func (o *OutsideHost) in(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		done <- o.inLocked(f)
	}()
	return <-done
}

func (o *OutsideHost) inLocked(f func() error) error {
	target, err := unix.Open("/run/netns/"+o.ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(target)
	self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(self)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		return err
	}
	ferr := f()
	if err := unix.Setns(self, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("back to the host's network: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}
