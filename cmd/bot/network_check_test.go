package main

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// -check says how the agent's commands reach the network, and refuses
// sandbox.network: true on a machine without slirp4netns (the bot refuses to
// start the same way) instead of giving the sandbox the host's network.
func TestCheckNetworkNeedsItsHelper(t *testing.T) {
	sandboxtest.Network(t) // or skip, saying why
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Network = true
	ok, out := runCheck(t, cfg)
	if !ok || !strings.Contains(out, "; network on (through slirp4netns: not this host's own services)") {
		t.Fatalf("check = %v, %q; want the sandbox line with the network on, then ok", ok, out)
	}

	t.Setenv("PATH", "")
	ok, out = runCheck(t, cfg)
	if ok || !strings.Contains(out, "sandbox.network: the network needs slirp4netns, which is not installed") {
		t.Errorf("check without slirp4netns = %v, %q; want the refusal", ok, out)
	}
	// The network off needs no helper.
	cfg.Sandbox.Network = false
	if _, out := runCheck(t, cfg); !strings.HasPrefix(out, "sandbox: namespaces") || strings.Contains(out, "slirp4netns") {
		t.Errorf("check with the network off and no slirp4netns: %q", out)
	}
}
