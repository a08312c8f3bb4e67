//go:build !linux

package sandbox

import "fmt"

func (s *Sandbox) startConfined(Spec) (process, error) {
	return nil, fmt.Errorf("%w: sandboxing needs Linux", ErrUnavailable)
}

func (s *Sandbox) probe() error {
	return fmt.Errorf("%w: sandboxing needs Linux namespaces; set sandbox.mode: none to run commands unsandboxed", ErrUnavailable)
}

// startLimited starts cmd without the file size limit, which needs Linux.
func startLimited(cmd *spawn, _ int64) error { return cmd.Start() }

const seccompAvailable = false
