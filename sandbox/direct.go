package sandbox

import (
	"fmt"
	"os"
	"sync"
	"syscall"
)

// direct is a command of ModeNone: its own process group, killed whole.
type direct struct {
	cmd      *spawn
	killOnce sync.Once
}

func startDirect(sp Spec) (process, error) {
	cmd := &spawn{Path: sp.Path, Args: sp.Args, Env: sp.Env, Dir: sp.Dir}
	setStdio(cmd, sp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := cmd.Start
	if lim := fileSizeLimit(sp.FileSize); lim >= 0 {
		start = func() error { return startLimited(cmd, lim) }
	}
	if err := start(); err != nil {
		return nil, fmt.Errorf("sandbox: start: %w", err)
	}
	return &direct{cmd: cmd}, nil
}

// setStdio hands the spec's files to cmd as they are.
func setStdio(cmd *spawn, sp Spec) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = sp.Stdin, sp.Stdout, sp.Stderr
}

func (d *direct) kill() {
	// The group may outlive its leader (a background job): kill it whatever
	// the leader's state. Once the leader is reaped its pid may be reused,
	// so only a group that still had this leader is signalled twice at most.
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
}

func (d *direct) wait() (Exit, error) {
	err := d.cmd.Wait()
	// Nothing of one command outlives it: its background jobs die with it.
	d.killOnce.Do(d.kill)
	if err != nil {
		return Exit{}, fmt.Errorf("sandbox: wait: %w", err)
	}
	return exitOf(d.cmd.ProcessState), nil
}

func exitOf(ps *os.ProcessState) Exit {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal()}
	}
	return Exit{Code: ps.ExitCode()}
}
