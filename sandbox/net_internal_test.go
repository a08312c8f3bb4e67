package sandbox

import (
	"bytes"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
)

// Without slirp4netns a sandbox with the network on is refused, at New (so
// the bot does not start and -check says why) and, for a sandbox made
// without the network, at the Start of a command given it by WithNetwork:
// never a silent fall back to the host's network.
func TestNetworkWithoutItsHelperIsRefused(t *testing.T) {
	if _, err := New(Config{}); err != nil {
		if os.Getenv("THREADSMITH_REQUIRE_SANDBOX") == "" {
			t.Skipf("this machine has no usable sandbox: %v", err)
		}
		t.Fatal(err)
	}
	t.Setenv("PATH", "")

	_, err := New(Config{Network: true})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "sandbox.network: the network needs slirp4netns, which is not installed or not on the bot's PATH") {
		t.Errorf("New with the network on and no helper: %v", err)
	}
	off, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := off.WithNetwork(true).Start(Spec{Path: "/bin/true", Dir: dir, Mounts: []Mount{{Path: dir, Access: ReadWrite}}})
	if err == nil {
		p.Wait()
		t.Fatal("a command with the network started without the helper")
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "slirp4netns is not installed") {
		t.Errorf("Start: %v", err)
	}
}

// The package's own network type against the standard library's, on
// addresses and lengths of both families, and the host's own addresses as
// the kernel lists them against what net lists.
func TestPrefixAgreesWithNet(t *testing.T) {
	for _, c := range []string{"192.168.1.77/24", "10.0.2.15/8", "172.17.0.2/16", "1.2.3.4/32", "0.0.0.0/0", "10.1.2.3/13",
		"2001:db8::1/64", "fe80::1234:5678/10", "::1/128", "2001:db8:abcd::/48"} {
		ip, want, err := net.ParseCIDR(c)
		if err != nil {
			t.Fatal(err)
		}
		addr := []byte(ip.To4())
		if addr == nil {
			addr = ip.To16()
		}
		ones, _ := want.Mask.Size()
		p := prefix{Addr: addr, Bits: ones}
		if got := p.masked().String(); got != want.String() && net.ParseIP(strings.Split(got, "/")[0]).String()+"/"+strings.Split(got, "/")[1] != want.String() {
			t.Errorf("%s masked = %s, want %s", c, got, want)
		}
		for _, other := range []string{"192.168.1.1", "192.168.2.1", "10.9.9.9", "10.8.0.1", "2001:db8::ffff", "2001:db9::1", "fe80::1", "1.2.3.4"} {
			o := net.ParseIP(other)
			ob := []byte(o.To4())
			if ob == nil {
				ob = o.To16()
			}
			if got := p.contains(ob); got != want.Contains(o) && len(ob) == len(addr) {
				t.Errorf("%s contains %s = %v, want %v", c, other, got, want.Contains(o))
			}
		}
	}
	got, err := hostAddrs()
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(addrs) {
		t.Errorf("hostAddrs %v, net lists %v", got, addrs)
	}
	for _, a := range addrs {
		n := a.(*net.IPNet)
		ones, _ := n.Mask.Size()
		b := []byte(n.IP.To4())
		if b == nil {
			b = n.IP.To16()
		}
		if !slices.ContainsFunc(got, func(p prefix) bool { return bytes.Equal(p.Addr, b) && p.Bits == ones }) {
			t.Errorf("hostAddrs %v lacks %v", got, n)
		}
	}
}
