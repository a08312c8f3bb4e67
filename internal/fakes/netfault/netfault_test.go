package netfault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// echo is an upstream that sends back every line it reads.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return l.Addr().String()
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip writes a line and reads it back within d.
func roundTrip(c net.Conn, r *bufio.Reader, line string, d time.Duration) (string, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	got, err := r.ReadString('\n')
	return strings.TrimSuffix(got, "\n"), err
}

func TestProxyPassesDataThrough(t *testing.T) {
	p := New(t, echo(t))
	c, r := dial(t, p)
	if got, err := roundTrip(c, r, "hello", 10*time.Second); err != nil || got != "hello" {
		t.Fatalf("through the proxy: %q, %v; want hello", got, err)
	}
}

func TestDownRefusesAndClosesUntilUp(t *testing.T) {
	p := New(t, echo(t))
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "before", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Down()
	// The open connection is closed: a read ends (EOF or reset), it does
	// not time out.
	if _, err := roundTrip(c, r, "during", 10*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("an open connection while down: %v, want it closed", err)
	}
	if c2, err := net.DialTimeout("tcp", p.Addr(), 10*time.Second); err == nil {
		c2.Close()
		t.Fatal("a new connection while down was accepted, want refused")
	}
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	c3, r3 := dial(t, p)
	if got, err := roundTrip(c3, r3, "after", 10*time.Second); err != nil || got != "after" {
		t.Fatalf("after Up: %q, %v", got, err)
	}
}

func TestCutClosesOpenConnectionsAndAcceptsNewOnes(t *testing.T) {
	p := New(t, echo(t))
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "before", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.Cut(); err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(c, r, "during", 10*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("a connection open at the cut: %v, want it closed", err)
	}
	c2, r2 := dial(t, p)
	if got, err := roundTrip(c2, r2, "after", 10*time.Second); err != nil || got != "after" {
		t.Fatalf("a new connection after the cut: %q, %v", got, err)
	}
}

func TestHalfOpenHoldsDataWithoutClosing(t *testing.T) {
	p := New(t, echo(t))
	c, r := dial(t, p)
	if _, err := roundTrip(c, r, "before", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := p.HalfOpen(); err != nil {
		t.Fatal(err)
	}
	// Nothing comes back, and the connection is not closed either: the
	// read only times out (a short deadline: a closed connection would
	// fail at once, faster than it).
	if _, err := roundTrip(c, r, "lost", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("a half-open connection: %v, want a timeout (no data, no close)", err)
	}
	// A new connection is accepted and held the same way.
	c2, r2 := dial(t, p)
	if _, err := roundTrip(c2, r2, "lost too", 300*time.Millisecond); !isTimeout(err) {
		t.Fatalf("a new connection while half-open: %v, want a timeout", err)
	}
	p.Heal()
	c3, r3 := dial(t, p)
	if got, err := roundTrip(c3, r3, "healed", 10*time.Second); err != nil || got != "healed" {
		t.Fatalf("after Heal: %q, %v", got, err)
	}
}

func TestTrickleSlowsTheUpstream(t *testing.T) {
	p := New(t, echo(t))
	if err := p.Trickle(4, 20); err != nil {
		t.Fatal(err)
	}
	c, r := dial(t, p)
	line := strings.Repeat("x", 39) // 40 bytes with the newline: 10 pieces, 9 waits
	start := time.Now()
	got, err := roundTrip(c, r, line, 30*time.Second)
	if err != nil || got != line {
		t.Fatalf("trickled: %q, %v", got, err)
	}
	if d := time.Since(start); d < 9*20*time.Millisecond {
		t.Errorf("40 bytes in 4-byte pieces 20 ms apart came back in %s, want at least 180ms", d)
	}
}

func TestURLAndHostPort(t *testing.T) {
	p := New(t, echo(t))
	if got, want := p.URL("postgres://u@127.0.0.1:5432/db?sslmode=disable"), "postgres://u@"+p.Addr()+"/db?sslmode=disable"; got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	if got := HostPort("http://127.0.0.1:8080/v1"); got != "127.0.0.1:8080" {
		t.Errorf("HostPort = %q", got)
	}
}

func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// A proxy's port is below the kernel's ephemeral range, where no outgoing
// connection's local end can take it while Down or Cut has it closed.
func TestProxyPortIsBelowTheEphemeralRange(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	p := New(t, up.Addr().String())
	_, port, _ := net.SplitHostPort(p.Addr())
	if n, _ := strconv.Atoi(port); n < fixedPortMin || n >= ephemeralLow() {
		t.Errorf("the proxy listens on %s, want a port in [%d, %d)", p.Addr(), fixedPortMin, ephemeralLow())
	}
	if err := p.Cut(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != net.JoinHostPort("127.0.0.1", port) {
		t.Errorf("the port moved after a cut: %s", p.Addr())
	}
}
