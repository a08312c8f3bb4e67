package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The network of a sandbox with Config.Network on. The sandbox always has a
// network namespace of its own; with the network on, the bot also starts a
// user-mode network stack, slirp4netns, outside it. slirp4netns makes a tap
// device in the sandbox's namespace (10.0.2.100, gateway 10.0.2.2, DNS
// 10.0.2.3) and carries each of its connections out as an ordinary socket
// of the host, so the command reaches whatever the host reaches, except:
//
//   - the host's loopback: inside, 127.0.0.1 and ::1 are the sandbox's own,
//     and slirp4netns runs with --disable-host-loopback, so its gateway
//     address never leads to the host's 127.0.0.1 either;
//   - the host's own addresses (where a service listening on 0.0.0.0 would
//     answer), the networks it is directly on (its LAN segment, the other
//     containers of its compose network) and IPv4's link-local range (a
//     cloud's metadata service): the init makes them, v4 and v6, unreachable
//     in the sandbox's routing table before it drops its capabilities, and
//     the command has no CAP_NET_ADMIN to change that.
//
// slirp4netns parses what the sandbox sends, so it runs confined itself
// (--enable-sandbox: an empty root and no capabilities; --enable-seccomp).
// Names resolve through slirp4netns's DNS forwarder (the sandbox's
// /etc/resolv.conf names it; it asks the host's resolvers on port 53 only).
// Without slirp4netns, or without a /dev/net/tun the bot may open, a sandbox
// with the network on is refused: it never falls back to the host's network.

// netHelperName is the user-mode network stack the bot runs.
const netHelperName = "slirp4netns"

// The user-mode network's addresses (slirp4netns's defaults with
// --configure).
const (
	netDNS = "10.0.2.3"
	netTap = "tap0"
)

// netReadyTimeout bounds the wait of the init for the network.
const netReadyTimeout = 20 * time.Second

// findNetHelper looks for slirp4netns on the bot's PATH.
func findNetHelper() (string, error) {
	p, err := lookPath(netHelperName)
	if err != nil {
		return "", fmt.Errorf("the network needs %s, which is not installed or not on the bot's PATH (Debian: apt-get install slirp4netns)", netHelperName)
	}
	return p, nil
}

// checkNetwork finds the helper and proves it can make its tap device.
func checkNetwork() (string, error) {
	p, err := findNetHelper()
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile("/dev/net/tun", os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("the network needs /dev/net/tun readable and writable by the bot's user (%v; Docker: --device /dev/net/tun)", err)
	}
	f.Close()
	return p, nil
}

// findNet is the probe's part: a sandbox with the network on needs the
// helper; one without keeps its path for WithNetwork(true).
func (s *Sandbox) findNet() error {
	if !s.cfg.Network {
		s.netHelper, _ = findNetHelper()
		return nil
	}
	p, err := checkNetwork()
	if err != nil {
		return fmt.Errorf("%w: sandbox.network: %v", ErrUnavailable, err)
	}
	s.netHelper = p
	return nil
}

// prefix is a network: an address (4 or 16 bytes) and the length of its
// network part. The package keeps its own small type rather than importing
// net or net/netip, which sort late in the bot's initialisation order and
// would make every sandbox's init wait for most of the bot (see spawn).
type prefix struct {
	Addr []byte `json:"addr"`
	Bits int    `json:"bits"`
}

// slirpNet is the user-mode network's own; a host network that overlaps it
// is left to the host addresses' own routes (the sandbox's gateway and DNS
// forwarder must stay reachable).
var slirpNet = prefix{Addr: []byte{10, 0, 2, 0}, Bits: 24}

// linkLocal4 holds the cloud providers' metadata services (169.254.169.254),
// which answer the host with its credentials: never the outside world.
var linkLocal4 = prefix{Addr: []byte{169, 254, 0, 0}, Bits: 16}

// masked is p with the bits past its network part cleared.
func (p prefix) masked() prefix {
	a := make([]byte, len(p.Addr))
	for i := range a {
		switch left := p.Bits - 8*i; {
		case left >= 8:
			a[i] = p.Addr[i]
		case left > 0:
			a[i] = p.Addr[i] & byte(0xff<<(8-left))
		}
	}
	return prefix{Addr: a, Bits: p.Bits}
}

// contains reports whether addr (of p's family) is in p.
func (p prefix) contains(addr []byte) bool {
	if len(addr) != len(p.Addr) {
		return false
	}
	return bytes.Equal(prefix{Addr: addr, Bits: p.Bits}.masked().Addr, p.masked().Addr)
}

func (p prefix) String() string {
	var b strings.Builder
	if len(p.Addr) == 4 {
		for i, x := range p.Addr {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(strconv.Itoa(int(x)))
		}
	} else {
		for i := 0; i+1 < len(p.Addr); i += 2 {
			if i > 0 {
				b.WriteByte(':')
			}
			b.WriteString(strconv.FormatUint(uint64(p.Addr[i])<<8|uint64(p.Addr[i+1]), 16))
		}
	}
	return b.String() + "/" + strconv.Itoa(p.Bits)
}

// loopback reports whether addr is 127.0.0.0/8 or ::1.
func loopback(addr []byte) bool {
	if len(addr) == 4 {
		return addr[0] == 127
	}
	return bytes.Equal(addr, []byte{15: 1})
}

// linkLocal reports whether addr is 169.254.0.0/16 or fe80::/10.
func linkLocal(addr []byte) bool {
	if len(addr) == 4 {
		return addr[0] == 169 && addr[1] == 254
	}
	return addr[0] == 0xfe && addr[1]&0xc0 == 0x80
}

// hostAddrs lists the addresses of the host's interfaces with the length of
// their networks, from the kernel's routing socket.
func hostAddrs() ([]prefix, error) {
	rib, err := syscall.NetlinkRIB(syscall.RTM_GETADDR, syscall.AF_UNSPEC)
	if err != nil {
		return nil, err
	}
	msgs, err := syscall.ParseNetlinkMessage(rib)
	if err != nil {
		return nil, err
	}
	var out []prefix
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_DONE {
			break
		}
		if m.Header.Type != syscall.RTM_NEWADDR || len(m.Data) < syscall.SizeofIfAddrmsg {
			continue
		}
		ifa := (*syscall.IfAddrmsg)(unsafe.Pointer(&m.Data[0]))
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return nil, err
		}
		// IPv4's local address is IFA_LOCAL (IFA_ADDRESS is the peer's on a
		// point-to-point link); IPv6 has only IFA_ADDRESS.
		var addr []byte
		for _, a := range attrs {
			switch {
			case a.Attr.Type == syscall.IFA_LOCAL && ifa.Family == syscall.AF_INET:
				addr = a.Value
			case a.Attr.Type == syscall.IFA_ADDRESS && addr == nil:
				addr = a.Value
			}
		}
		if (ifa.Family == syscall.AF_INET && len(addr) == 4) || (ifa.Family == syscall.AF_INET6 && len(addr) == 16) {
			out = append(out, prefix{Addr: bytes.Clone(addr), Bits: int(ifa.Prefixlen)})
		}
	}
	return out, nil
}

// blockedNets lists what the sandbox must not reach: each address of the
// host's interfaces, loopback ones aside (the sandbox has its own loopback),
// the networks the host is directly on (its LAN segment, or the other
// containers of its compose network: the database), and IPv4's link-local
// range.
func blockedNets() ([]prefix, error) {
	addrs, err := hostAddrs()
	if err != nil {
		return nil, fmt.Errorf("listing the host's addresses: %w", err)
	}
	out := []prefix{linkLocal4}
	for _, a := range addrs {
		if loopback(a.Addr) {
			continue
		}
		bits := 8 * len(a.Addr)
		out = append(out, prefix{Addr: a.Addr, Bits: bits})
		network := a.masked()
		if a.Bits > 0 && a.Bits < bits && !linkLocal(a.Addr) &&
			!network.contains(slirpNet.Addr) && !slirpNet.contains(network.Addr) {
			out = append(out, network)
		}
	}
	return out, nil
}

// netPrep is a network being prepared for one sandbox: the pipe on which
// the helper tells the init that the network is up.
type netPrep struct {
	helper string
	ready  *os.File // write end: the helper's, until it runs
}

// netFD is the init's descriptor for the read end of the readiness pipe
// (after the spec, the status pipe and the hand-over socket).
const netFD = 6

// prepareNet fills in the network part of spec and returns the init's end
// of the readiness pipe, which launchInit makes its fd netFD.
func (s *Sandbox) prepareNet(spec *initSpec) (*netPrep, *os.File, error) {
	if s.netHelper == "" {
		return nil, nil, fmt.Errorf("%w: sandbox: %s is not installed: a command with the network cannot start", ErrUnavailable, netHelperName)
	}
	blocked, err := blockedNets()
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	spec.Blocked = blocked
	spec.NetFD = netFD
	return &netPrep{helper: s.netHelper, ready: w}, r, nil
}

// netStack is a running helper.
type netStack struct {
	cmd    *spawn
	exit   *os.File // closing it tells the helper to exit
	stderr *limitedBuffer
	read   chan struct{} // closed once the helper's stderr is read to its end
	once   sync.Once
}

// start runs the helper for the sandbox whose init is pid. The helper writes
// to the init's readiness pipe once the tap device is configured; should it
// fail, the pipe closes and the init reports the error.
func (p *netPrep) start(pid int) (*netStack, error) {
	defer p.ready.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer exitR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		exitR.Close()
		exitW.Close()
		return nil, err
	}
	defer errW.Close()
	cmd := &spawn{
		Path: p.helper,
		Args: []string{netHelperName, "--configure", "--mtu=65520", "--disable-host-loopback", "--enable-sandbox", "--enable-seccomp",
			"--ready-fd=3", "--exit-fd=4", strconv.Itoa(pid), netTap},
		// Nothing of the bot's environment: that is where its secrets are.
		Env:        []string{},
		Stderr:     errW,
		ExtraFiles: []*os.File{p.ready, exitR},
		// It goes with the bot, by the signal or by the exit pipe closing.
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		exitW.Close()
		errR.Close()
		return nil, fmt.Errorf("starting %s: %w", netHelperName, err)
	}
	n := &netStack{cmd: cmd, exit: exitW, stderr: &limitedBuffer{max: 4096}, read: make(chan struct{})}
	go func() {
		defer close(n.read)
		defer errR.Close()
		b := make([]byte, 1024)
		for {
			m, err := errR.Read(b)
			n.stderr.Write(b[:m])
			if err != nil {
				return
			}
		}
	}()
	return n, nil
}

// stop ends the helper (the sandbox is gone). With report it waits for the
// helper's end and returns what it printed. Without, the helper is reaped in
// the background: as it exits the kernel tears its tap device down, which
// takes longer than the whole command often did, and the command's end
// need not wait for that.
func (n *netStack) stop(report bool) string {
	if n == nil {
		return ""
	}
	n.once.Do(func() {
		_ = n.cmd.Process.Kill()
		n.exit.Close()
		if !report {
			go n.cmd.Wait()
			return
		}
		_ = n.cmd.Wait()
		<-n.read
	})
	if !report {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(n.stderr.String(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "WARNING: Support for seccomp is experimental") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The init's part.

// setupNetwork brings up the sandbox's loopback and, with the network on,
// waits for the helper's tap device and makes the host's own addresses
// unreachable. The init still holds CAP_NET_ADMIN over the namespace here;
// the command will not.
func setupNetwork(spec *initSpec) error {
	if err := loopbackUp(); err != nil {
		return fmt.Errorf("bringing up the loopback interface: %w", err)
	}
	if !spec.Network {
		return nil
	}
	if err := blockNets(spec.Blocked); err != nil {
		return fmt.Errorf("making the host's addresses unreachable: %w", err)
	}
	if err := waitReady(spec.NetFD); err != nil {
		return fmt.Errorf("the network (%s) did not come up: %w", netHelperName, err)
	}
	return nil
}

// waitReady reads the helper's "1" on fd.
func waitReady(fd int) error {
	defer unix.Close(fd)
	deadline := time.Now().Add(netReadyTimeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return errors.New("timed out")
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		b := make([]byte, 8)
		m, err := unix.Read(fd, b)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if err != nil {
			return err
		}
		if m == 0 {
			return errors.New("the helper ended before it was ready")
		}
		return nil
	}
}

// resolvConf is the sandbox's /etc/resolv.conf with the network on: the
// helper's DNS forwarder, with the host's search and options lines.
func resolvConf(host []byte) []byte {
	var b strings.Builder
	b.WriteString("nameserver " + netDNS + "\n")
	for _, l := range strings.Split(string(host), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "search" || f[0] == "domain" || f[0] == "options") {
			b.WriteString(strings.TrimSpace(l) + "\n")
		}
	}
	return []byte(b.String())
}

// showResolvConf puts resolvConf over /etc/resolv.conf in the tree being
// built (before the final pivot: the base tmpfs at / is writable).
func showResolvConf(spec *initSpec) error {
	if !spec.Network {
		return nil
	}
	host, _ := os.ReadFile("/oldroot/etc/resolv.conf")
	if err := os.WriteFile("/resolv.conf", resolvConf(host), 0o444); err != nil {
		return err
	}
	return bind("/resolv.conf", "/newroot/etc/resolv.conf", false, true)
}

// blockNets adds an unreachable route for each network, in the calling
// thread's network namespace, over rtnetlink.
func blockNets(nets []prefix) error {
	if len(nets) == 0 {
		return nil
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	for i, n := range nets {
		if len(n.Addr) != 4 && len(n.Addr) != 16 || n.Bits < 0 || n.Bits > 8*len(n.Addr) {
			return fmt.Errorf("bad network %v", n)
		}
		err = addUnreachable(fd, uint32(i+1), n)
		switch {
		case err == nil, errors.Is(err, unix.EEXIST):
		case len(n.Addr) == 16 && (errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.EOPNOTSUPP)):
			// A kernel without IPv6: nothing reaches any v6 address.
		default:
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// addUnreachable sends RTM_NEWROUTE for n of type RTN_UNREACHABLE and
// reads the kernel's answer.
func addUnreachable(fd int, seq uint32, n prefix) error {
	family, addr := uint8(unix.AF_INET), n.Addr
	if len(addr) == 16 {
		family = unix.AF_INET6
	}
	ones := n.Bits
	attrLen := unix.SizeofRtAttr + len(addr)
	total := unix.SizeofNlMsghdr + unix.SizeofRtMsg + (attrLen+3)&^3
	b := make([]byte, total)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(total))
	ne.PutUint16(b[4:], unix.RTM_NEWROUTE)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK|unix.NLM_F_CREATE|unix.NLM_F_EXCL)
	ne.PutUint32(b[8:], seq)
	rt := b[unix.SizeofNlMsghdr:]
	rt[0] = family
	rt[1] = uint8(ones) // dst_len
	rt[4] = unix.RT_TABLE_MAIN
	rt[5] = unix.RTPROT_BOOT
	rt[6] = unix.RT_SCOPE_UNIVERSE
	rt[7] = unix.RTN_UNREACHABLE
	at := rt[unix.SizeofRtMsg:]
	ne.PutUint16(at[0:], uint16(attrLen))
	ne.PutUint16(at[2:], unix.RTA_DST)
	copy(at[unix.SizeofRtAttr:], addr)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	resp := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, resp, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(resp[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			if errno := int32(ne.Uint32(m.Data[0:4])); errno != 0 {
				return syscall.Errno(-errno)
			}
			return nil
		}
	}
}

// lookPath finds an executable regular file called name in the folders of
// the bot's PATH, as os/exec's LookPath does for a plain name (which this
// package does not import: see spawn).
func lookPath(name string) (string, error) {
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found in PATH", name)
}
