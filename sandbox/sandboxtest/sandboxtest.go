// Package sandboxtest gives tests a real sandbox, or a clear skip on a
// machine that has none (unless THREADSMITH_REQUIRE_SANDBOX is set, as CI
// does, where the missing sandbox is a failure).
package sandboxtest

import (
	"errors"
	"os"
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
