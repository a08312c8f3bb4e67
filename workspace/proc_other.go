//go:build !unix

package workspace

import "os/exec"

func setProcessGroup(cmd *exec.Cmd) {}
