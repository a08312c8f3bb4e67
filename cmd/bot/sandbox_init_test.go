package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"testing"
)

// The sandbox's init is this binary re-executed, and it runs in the sandbox
// package's initialiser: everything initialised before it is paid on every
// sandboxed command. Go initialises a package once all it imports are, in
// import path order, so the sandbox package must not import what sorts
// late and waits for most of the bot's packages (os/exec and path/filepath,
// which come after the protobuf, x/text and prometheus initialisers here).
func TestSandboxInitDoesNotWaitForTheBotsPackages(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var order []string
	for _, m := range regexp.MustCompile(`(?m)^init (\S+) @`).FindAllStringSubmatch(string(out), -1) {
		order = append(order, m[1])
	}
	sb := slices.Index(order, "github.com/threadsmith/threadsmith/sandbox")
	if sb < 0 {
		t.Fatalf("no init of the sandbox package in the trace:\n%s", out)
	}
	for _, late := range []string{"path/filepath", "golang.org/x/text/language", "google.golang.org/protobuf/proto"} {
		if i := slices.Index(order, late); i >= 0 && i < sb {
			t.Errorf("%s is initialised before the sandbox (%d packages in all before it)", late, sb)
		}
	}
}
