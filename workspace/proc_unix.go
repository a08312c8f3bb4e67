//go:build unix

package workspace

import (
	"os/exec"
	"syscall"
)

// setProcessGroup makes cmd the leader of a new process group and kills the
// whole group on cancellation, so helpers git spawns die with it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
