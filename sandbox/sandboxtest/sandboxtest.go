// Package sandboxtest gives tests a real sandbox, or a clear skip on a
// machine that has none (unless THREADSMITH_REQUIRE_SANDBOX is set, as CI
// does, where the missing sandbox is a failure).
package sandboxtest

import (
	"bytes"
	"errors"
	"os"
	"strconv"
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
