package sandbox

import (
	"os"
	"strings"
	"syscall"
)

// spawn starts a child process from an *os.File for each standard file, as
// os/exec would for files, without os/exec. This package must not import
// os/exec or path/filepath: the sandbox's init runs in this package's
// initialiser, which Go runs only once every package it imports has been
// initialised, and those two sort late enough that nearly all of the bot's
// other packages (their initialisers take milliseconds) would run first,
// on every sandboxed command.
type spawn struct {
	Path                  string
	Args                  []string
	Env                   []string // nil: the bot's environment
	Dir                   string
	Stdin, Stdout, Stderr *os.File // nil: /dev/null
	ExtraFiles            []*os.File
	SysProcAttr           *syscall.SysProcAttr

	Process      *os.Process
	ProcessState *os.ProcessState
}

// Start starts the process.
func (c *spawn) Start() error {
	files := []*os.File{c.Stdin, c.Stdout, c.Stderr}
	for i, f := range files {
		if f != nil {
			continue
		}
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer null.Close()
		files[i] = null
	}
	env := c.Env
	if env != nil {
		env = dedupEnv(env)
	}
	p, err := os.StartProcess(c.Path, c.Args, &os.ProcAttr{Dir: c.Dir, Env: env, Files: append(files, c.ExtraFiles...), Sys: c.SysProcAttr})
	if err != nil {
		return err
	}
	c.Process = p
	return nil
}

// Wait waits for the process to end. Unlike os/exec's, it returns an error
// only when waiting failed, not for an exit status other than 0.
func (c *spawn) Wait() error {
	st, err := c.Process.Wait()
	c.ProcessState = st
	return err
}

// dedupEnv keeps the last of each variable set more than once, as os/exec
// does.
func dedupEnv(env []string) []string {
	seen := make(map[string]bool, len(env))
	out := make([]string, 0, len(env))
	for i := len(env) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(env[i], "=")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, env[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
