// Package sandboxtest gives tests a real sandbox, or a clear skip on a
// machine that has none (unless THREADSMITH_REQUIRE_SANDBOX is set, as CI
// does, where the missing sandbox is a failure).
package sandboxtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/sandbox"
)

// New returns a confined sandbox with cfg (Mode defaults to auto).
func New(t testing.TB, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(cfg)
	if errors.Is(err, sandbox.ErrUnavailable) && os.Getenv("THREADSMITH_REQUIRE_SANDBOX") == "" {
		t.Skipf("this machine has no usable sandbox (set THREADSMITH_REQUIRE_SANDBOX=1 to fail instead): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// Live lists the processes on the machine whose command line holds marker,
// as "pid: command line" (zombies included: they are reaped later).
func Live(marker string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			found = append(found, e.Name()+": "+string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return found
}

// HostListener listens on the host's 127.0.0.1 until the test ends and
// closes every connection it accepts; accepted holds a value once one came.
// A sandbox without network must never reach it.
func HostListener(t testing.TB) (port int, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan struct{}, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
			select {
			case ch <- struct{}{}:
			default: // one is enough, and the loop must not block
			}
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, ch
}

// Shows reports whether out shows secret: as it is, reversed, or inside a
// base64 block (of the secret or of it reversed), the ways an attacker gets
// a secret past an output filter that replaces the exact string.
func Shows(out, secret string) bool {
	rev := []byte(secret)
	slices.Reverse(rev)
	shows := func(s string) bool { return strings.Contains(s, secret) || strings.Contains(s, string(rev)) }
	if shows(out) {
		return true
	}
	for _, block := range base64Block.FindAllString(out, -1) {
		// The block may start before the encoded text does (a word of
		// the line before it): decode it from each of the four offsets;
		// one is aligned, and garbage in front does not matter.
		s := strings.TrimRight(strings.Join(strings.Fields(block), ""), "=")
		for off := 0; off < 4 && off < len(s); off++ {
			t := s[off:]
			if len(t)%4 == 1 {
				t = t[:len(t)-1] // no base64 text has such a length
			}
			if b, err := base64.RawStdEncoding.DecodeString(t); err == nil && shows(string(b)) {
				return true
			}
		}
	}
	return false
}

// base64Block matches base64 text, wrapped as base64(1) wraps it.
var base64Block = regexp.MustCompile(`(?:[A-Za-z0-9+/]{4}\s*){4,}(?:[A-Za-z0-9+/]{2,3}={0,2})?`)

// MemGrep is a perl script that reads the memory of the processes whose pids
// are its arguments, through /proc/<pid>/maps and /proc/<pid>/mem, and prints
// every string in it that looks like one of the tests' secrets
// (sk-<word>-<digits>-<hex>): what an attacker does for a key that lives only
// in the bot's memory. Run it as: perl -e "$MemGrep" PID...
const MemGrep = `
for my $pid (@ARGV) {
	open(my $maps, "<", "/proc/$pid/maps") or do { print "maps $pid: $!\n"; next };
	open(my $mem, "<:raw", "/proc/$pid/mem") or do { print "mem $pid: $!\n"; next };
	my ($n, $hits) = (0, 0);
	while (<$maps>) {
		my ($lo, $hi, $perm) = /^([0-9a-f]+)-([0-9a-f]+) (\S+)/ or next;
		next unless $perm =~ /^r/;
		my ($a, $b) = (hex $lo, hex $hi);
		next if $b - $a > 256 << 20;
		seek($mem, $a, 0) or next;
		my $buf;
		my $got = sysread($mem, $buf, $b - $a) or next;
		$n += $got;
		while ($hits < 4 && $buf =~ /(sk-[a-z]+-[0-9]+-[0-9a-f]+)/g) { print "mem $pid: $1\n"; $hits++ }
	}
	print "mem $pid: read $n bytes\n";
}`
