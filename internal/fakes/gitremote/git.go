// Package gitremote gives tests real git remotes: bare repositories on disk
// seeded with files, an authenticated smart-HTTP server (git http-backend
// behind net/http/cgi with Basic auth) and an ssh server with key auth
// (git-upload-pack/receive-pack behind golang.org/x/crypto/ssh), both on
// 127.0.0.1.
//
// Every git command it runs is hermetic: no global or system configuration, no
// terminal prompts, and a fixed identity, because CI machines have no git
// identity and a developer's ~/.gitconfig must not change what a test sees.
// Helpers take a testing.TB and fail the test on any error; everything they
// start is stopped by tb.Cleanup.
package gitremote

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Identity used for commits this package makes unless a caller names another.
const (
	DefaultName  = "Remote Human"
	DefaultEmail = "human@example.com"
)

// Env returns the environment for a hermetic git command: the process's
// environment without any GIT_* variable (a test run from a git hook inherits
// GIT_DIR and friends), no global or system config, no prompts, a fixed
// identity, and English messages.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "LC_ALL=") || strings.HasPrefix(kv, "LANGUAGE=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME="+DefaultName,
		"GIT_AUTHOR_EMAIL="+DefaultEmail,
		"GIT_COMMITTER_NAME="+DefaultName,
		"GIT_COMMITTER_EMAIL="+DefaultEmail,
		"LC_ALL=C",
	)
	return append(env, extra...)
}

// Git runs git with args in dir (hermetically) and returns its trimmed stdout.
// It fails the test if git fails.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	return GitInput(tb, dir, nil, nil, args...)
}

// GitInput is Git with standard input and extra environment variables.
func GitInput(tb testing.TB, dir string, stdin []byte, env []string, args ...string) string {
	tb.Helper()
	out, err := run(dir, stdin, env, args...)
	if err != nil {
		tb.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimRight(out, "\n")
}

// TryGit runs git like Git but returns the failure instead of failing the
// test, for commands that are expected to fail.
func TryGit(dir string, args ...string) (string, error) {
	return run(dir, nil, nil, args...)
}

func run(dir string, stdin []byte, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env(env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &gitError{err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

type gitError struct {
	err    error
	stderr string
}

func (e *gitError) Error() string { return e.err.Error() + ": " + e.stderr }
