//go:build !linux

package workspace

import "os/exec"

// startLowPriority starts cmd. Only on Linux, where priority is per thread,
// can git be started at a lower priority without lowering the bot's own.
func startLowPriority(cmd *exec.Cmd) error { return cmd.Start() }
