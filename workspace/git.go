package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"
)

// passedEnv are the only variables of the bot's environment a git process
// sees: enough to find programs, a home for ssh's known_hosts, proxies and CA
// bundles. The bot's own secrets stay out.
var passedEnv = []string{
	"PATH", "HOME", "TMPDIR", "LANG", "SSH_AUTH_SOCK",
	"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy", "ALL_PROXY", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// Environment variables that carry credentials to git's credential helper;
// the token itself is never on a command line or in a config file.
const (
	envUser     = "THREADSMITH_GIT_USERNAME"
	envPassword = "THREADSMITH_GIT_PASSWORD"
)

// credentialHelper answers git's "get" with the credentials from the
// environment and ignores "store"/"erase", so nothing is ever saved.
const credentialHelper = `!f() { test "$1" = get || exit 0; printf 'username=%s\npassword=%s\n' "$` + envUser + `" "$` + envPassword + `"; }; f`

// gitCall is one run of the git CLI.
type gitCall struct {
	dir   string
	args  []string
	env   []string // extra variables
	stdin []byte
	// network calls get credentials and the GitTimeout.
	network bool
	// gc leaves automatic gc enabled (every other call disables it, so that
	// maintenance happens only when the janitor says so, never detached).
	gc bool
}

// gitRunner runs the git CLI hermetically for one repository.
type gitRunner struct {
	author  Identity
	timeout time.Duration
	repo    Repo // credentials for network calls
	redact  redactor
	log     *slog.Logger // nil: no logging
}

// run executes c and returns stdout. A failure is a *gitError whose text is
// redacted.
func (g *gitRunner) run(ctx context.Context, c gitCall) (string, error) {
	if c.network {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "git", c.args...)
	cmd.Dir = c.dir
	cmd.Env = g.env(c)
	// Kill the whole process group: git fetch/push spawn helpers
	// (git-remote-https, ssh) that would otherwise outlive the timeout.
	setProcessGroup(cmd)
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	if g.log != nil {
		g.log.Debug("git", "args", g.redact.String(strings.Join(c.args, " ")), "dur", time.Since(start), "err", err)
	}
	if err == nil {
		return stdout.String(), nil
	}
	ge := &gitError{
		args:   g.redact.String(strings.Join(c.args, " ")),
		stderr: g.redact.String(strings.TrimSpace(stderr.String())),
		err:    err,
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		ge.exitCode = exit.ExitCode()
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		ge.err = ctxErr
		ge.timedOut = errors.Is(ctxErr, context.DeadlineExceeded)
	}
	return stdout.String(), ge
}

// out runs c and returns stdout without its trailing newline.
func (g *gitRunner) out(ctx context.Context, dir string, args ...string) (string, error) {
	s, err := g.run(ctx, gitCall{dir: dir, args: args})
	return strings.TrimRight(s, "\n"), err
}

func (g *gitRunner) env(c gitCall) []string {
	env := make([]string, 0, 32)
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME="+g.author.Name,
		"GIT_AUTHOR_EMAIL="+g.author.Email,
		"GIT_COMMITTER_NAME="+g.author.Name,
		"GIT_COMMITTER_EMAIL="+g.author.Email,
	)
	cfg := [][2]string{
		{"core.hooksPath", "/dev/null"}, // no hook runs, whoever wrote it
		{"gc.autoDetach", "false"},
		{"maintenance.auto", "false"},
		{"advice.detachedHead", "false"},
	}
	if !c.gc {
		cfg = append(cfg, [2]string{"gc.auto", "0"})
	}
	if c.network {
		switch g.repo.kind() {
		case kindHTTP:
			if g.repo.Token != "" {
				// An empty value resets the helper list, then ours is the only one.
				cfg = append(cfg, [2]string{"credential.helper", ""}, [2]string{"credential.helper", credentialHelper})
				env = append(env, envUser+"="+g.repo.Username, envPassword+"="+g.repo.Token)
			}
		case kindSSH:
			ssh := "ssh -o BatchMode=yes -o ConnectTimeout=" + fmt.Sprint(max(1, int(g.timeout/time.Second)))
			if g.repo.SSHKeyFile != "" {
				ssh += " -o IdentitiesOnly=yes -i " + shellQuote(g.repo.SSHKeyFile)
			}
			if g.repo.SSHKnownHosts != "" {
				ssh += " -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + shellQuote(g.repo.SSHKnownHosts)
			}
			env = append(env, "GIT_SSH_COMMAND="+ssh)
		}
	}
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return append(env, c.env...)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// gitError is a failed git command. Its text is already redacted.
type gitError struct {
	args     string
	stderr   string
	exitCode int
	timedOut bool
	err      error
}

func (e *gitError) Error() string {
	if e.stderr != "" {
		return fmt.Sprintf("git %s: %v: %s", e.args, e.err, e.stderr)
	}
	return fmt.Sprintf("git %s: %v", e.args, e.err)
}

func (e *gitError) Unwrap() error { return e.err }

// exitStatus returns the exit code of a failed git command, or -1.
func exitStatus(err error) int {
	var ge *gitError
	if errors.As(err, &ge) && ge.err != nil && !ge.timedOut {
		return ge.exitCode
	}
	return -1
}

// remoteError turns a failed network operation on repository name into an
// *Error with a message for the thread. detail is already redacted.
func remoteError(name, op string, timeout time.Duration, detail error) *Error {
	text := strings.ToLower(detail.Error())
	var ge *gitError
	timedOut := errors.As(detail, &ge) && ge.timedOut || errors.Is(detail, context.DeadlineExceeded)
	switch {
	case timedOut:
		return newError(CodeUnreachable, fmt.Sprintf("Could not %s repository %q: the remote did not answer within %s.", op, name, timeout), detail)
	case containsAny(text, "authentication failed", "authentication required", "could not read username",
		"could not read password", "returned error: 401", "returned error: 403", "authorization failed",
		"permission denied (publickey", "invalid credentials", "access denied", "host key verification failed",
		"unable to authenticate", "knownhosts:"):
		return newError(CodeAuth, fmt.Sprintf("Could not %s repository %q: the remote refused the credentials. Check the repository's token or ssh key.", op, name), detail)
	case containsAny(text, "repository not found", "returned error: 404", "does not appear to be a git repository",
		"not found", "no such file or directory"):
		return newError(CodeUnreachable, fmt.Sprintf("Could not %s repository %q: the remote repository was not found (or the credentials cannot see it). Check its url.", op, name), detail)
	default:
		return newError(CodeUnreachable, fmt.Sprintf("Could not %s repository %q: the remote could not be reached.", op, name), detail)
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
