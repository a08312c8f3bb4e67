package sandbox

import (
	"errors"
	"os"
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
