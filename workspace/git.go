package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	dir string
	// gitDir, commonDir and workTree reach git as GIT_DIR, GIT_COMMON_DIR
	// and GIT_WORK_TREE, so that it never discovers a repository by itself:
	// a worktree's .git file, the commondir file of its admin dir and any
	// .git an agent plants are writable by the agent's bash, and following
	// them would let it hand the bot's git a repository (and a config) of its
	// choosing. All empty only for commands that make a repository (init).
	gitDir, commonDir, workTree string
	args                        []string
	env                         []string // extra variables
	stdin                       []byte
	// network calls get credentials, the remote's transport and the
	// GitTimeout.
	network bool
	// gc leaves automatic gc enabled (every other call disables it, so that
	// maintenance happens only when the janitor says so, never detached),
	// without pruning.
	gc bool
}

// gitRunner runs the git CLI hermetically for one repository.
type gitRunner struct {
	author  Identity
	timeout time.Duration
	repo    Repo // credentials for network calls
	redact  redactor
	log     *slog.Logger // nil: no logging

	// mirrorDir is the repository's mirror; config holds what its config
	// file must contain (nil until the mirror's ensure has worked it out).
	// Every call on the mirror or one of its worktrees first puts that
	// content back if anyone else changed it: see enforceConfig.
	mirrorDir string
	config    atomic.Pointer[[]byte]
	// storesDir holds the threads' repositories (see store), whose config
	// files are the mirror's too.
	storesDir string
}

// run executes c and returns stdout. A failure is a *gitError whose text is
// redacted.
func (g *gitRunner) run(ctx context.Context, c gitCall) (string, error) {
	if c.gitDir == "" && (len(c.args) == 0 || c.args[0] != "init") {
		// Fail closed rather than let git discover a repository from dir.
		return "", newError(CodeInternal, "", fmt.Errorf("git %s in %s without an explicit repository", strings.Join(c.args, " "), c.dir))
	}
	if c.commonDir != "" && (c.commonDir == g.mirrorDir || filepath.Dir(c.commonDir) == g.storesDir) {
		if err := g.enforceConfig(c.commonDir); err != nil {
			return "", err
		}
	}
	if c.commonDir != "" && filepath.Dir(c.commonDir) == g.storesDir {
		if err := g.enforceAlternates(c.commonDir); err != nil {
			return "", err
		}
	}
	// Network calls, and calls that read the work tree: the agent's files
	// can hold git up (a named pipe as a nested repository's .git/HEAD is
	// opened and read, and blocks).
	if c.network || c.workTree != "" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.timeout)
		defer cancel()
	}
	// --no-pager: no pager runs, whatever core.pager or pager.<cmd> say
	// (git would only start one on a terminal, but it costs nothing to be
	// sure).
	cmd := exec.CommandContext(ctx, "git", append([]string{"--no-pager"}, c.args...)...)
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
	if ge.timedOut && !c.network && c.workTree != "" {
		return stdout.String(), stuckError(c.workTree, g.timeout, ge)
	}
	return stdout.String(), ge
}

// stuckError is a git call in the work tree root that did not finish within
// timeout. The likely cause is looked for in root: a named pipe, socket or
// device file, which git may open and wait on (it skips them as files, not
// where it expects a repository's HEAD or .git). The walk reads no file and
// follows no link; its answer names the path for the thread, quoted.
func stuckError(root string, timeout time.Duration, ge *gitError) *Error {
	found := ""
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: not looked into
		}
		if d.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			found, _ = filepath.Rel(root, p)
			return filepath.SkipAll
		}
		return nil
	})
	msg := fmt.Sprintf("Git did not finish within %s in this thread's workspace", timeout)
	if found != "" {
		if r := []rune(found); len(r) > 200 {
			found = "…" + string(r[len(r)-199:])
		}
		msg += fmt.Sprintf(": the special file %q (a named pipe or device) holds it up. Remove it and the next run commits again.", found)
	} else {
		msg += "."
	}
	return newError(CodeInternal, msg, ge)
}

// out runs c and returns stdout without its trailing newline.
func (g *gitRunner) out(ctx context.Context, c gitCall) (string, error) {
	s, err := g.run(ctx, c)
	return strings.TrimRight(s, "\n"), err
}

// enforceConfig makes the mirror's config file hold exactly what the bot
// wrote there. Everything in it is under the control of whoever can write
// the mirror (`git config` in a worktree writes it), and much of git's
// configuration names commands to run (filter and merge drivers, diff
// textconv, fsmonitor, hooks, credential helpers, ssh, pagers, editors) or
// places to send credentials (remote and insteadOf URLs, proxies, TLS
// settings), many under names git lets the writer choose. Rather than chase
// each key, the bot owns the whole file: a changed file is replaced before
// any git the bot runs can read it. The fixed-name keys are also pinned in
// every call's environment (neutralConfig), which holds even if the file is
// changed again between this check and git reading it.
//
// The same holds for every thread's repository (dir), whose config is the
// mirror's.
func (g *gitRunner) enforceConfig(dir string) error {
	want := g.config.Load()
	if want == nil {
		// Fail closed: no git call on the mirror before ensure decided what
		// its config is.
		return newError(CodeInternal, "", fmt.Errorf("git call on %s before its config was established", dir))
	}
	path := filepath.Join(dir, "config")
	if got, err := os.ReadFile(path); err == nil && bytes.Equal(got, *want) {
		return nil
	}
	if g.log != nil {
		g.log.Warn("the repository's git config was changed outside the bot; restoring it", "dir", dir)
	}
	if err := writeFileAtomic(path, *want, 0o644); err != nil {
		return newError(CodeInternal, "", fmt.Errorf("restore mirror config: %w", err))
	}
	return nil
}

// enforceAlternates makes the objects/info/alternates file of the thread's
// repository dir name the mirror's object store and nothing else, as the bot
// wrote it: an alternate store is where git reads objects from (and runs
// core.alternateRefsCommand for).
func (g *gitRunner) enforceAlternates(dir string) error {
	want := filepath.Join(g.mirrorDir, "objects") + "\n"
	path := filepath.Join(dir, "objects", "info", "alternates")
	if got, err := os.ReadFile(path); err == nil && string(got) == want {
		return nil
	}
	if g.log != nil {
		g.log.Warn("the thread repository's alternates file was changed outside the bot; restoring it", "dir", dir)
	}
	if err := writeFileAtomic(path, []byte(want), 0o644); err != nil {
		return newError(CodeInternal, "", fmt.Errorf("restore alternates: %w", err))
	}
	return nil
}

// neutralConfig is set on every git call through GIT_CONFIG_COUNT/KEY/VALUE,
// which outranks every configuration file and is inherited by git processes
// that git itself starts. It turns off what a repository's configuration
// could make git run or where it could make it connect, for keys with fixed
// names; keys whose names the writer chooses (filter.<driver>.*,
// merge.<driver>.driver, diff.<driver>.*, url.<base>.*, remote.<url>.*) are
// handled by owning the config file (enforceConfig), by flags on the bot's
// diffs (--no-ext-diff, --no-textconv), by GIT_ALLOW_PROTOCOL and by
// credentials bound to the configured host.
var neutralConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"}, // no hook runs, whoever wrote it
	{"core.pager", "cat"},
	{"core.editor", "true"},
	{"sequence.editor", "true"},
	{"core.askPass", ""},
	{"core.alternateRefsCommand", ""},
	{"core.attributesFile", "/dev/null"},
	{"core.sshCommand", "false"}, // replaced by the pinned command for ssh remotes
	{"credential.helper", ""},    // an empty value empties the list of helpers
	{"protocol.ext.allow", "never"},
	{"http.sslVerify", "true"},
	// Nested repositories (submodules, or any repository the agent makes
	// inside the worktree): git would run `git status` inside them, with
	// their own configuration, to see whether they are dirty.
	{"submodule.recurse", "false"},
	{"fetch.recurseSubmodules", "false"},
	{"diff.ignoreSubmodules", "dirty"},
	{"diff.submodule", "short"},
	{"status.submoduleSummary", "false"},
	// Signing and verifying run gpg.program (or ssh-keygen) from config.
	{"commit.gpgSign", "false"},
	{"tag.gpgSign", "false"},
	{"merge.verifySignatures", "false"},
	{"log.showSignature", "false"},
	{"gpg.program", "false"},
	{"gpg.openpgp.program", "false"},
	{"gpg.x509.program", "false"},
	{"gpg.ssh.program", "false"},
	// A rebase touches the thread's branch and nothing else.
	{"rebase.updateRefs", "false"},
	{"rebase.autoStash", "false"},
	// Every git call names its repository; never discover a bare one.
	{"safe.bareRepository", "explicit"},
	// Worktrees are removed by the bot only (see mirror.pruneStale): git's
	// prune would drop the registration of a worktree whose .git file the
	// agent deleted, and with it the index.
	{"gc.worktreePruneExpire", "never"},
	{"gc.autoDetach", "false"},
	{"maintenance.auto", "false"},
	{"advice.detachedHead", "false"},
}

func (g *gitRunner) env(c gitCall) []string {
	env := make([]string, 0, 64)
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	env = append(env,
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		// The environment outranks core.pager, pager.<cmd>, core.editor,
		// sequence.editor and core.gitProxy (an empty proxy command is none).
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_EDITOR=true",
		"GIT_SEQUENCE_EDITOR=true",
		"GIT_PROXY_COMMAND=",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME="+g.author.Name,
		"GIT_AUTHOR_EMAIL="+g.author.Email,
		"GIT_COMMITTER_NAME="+g.author.Name,
		"GIT_COMMITTER_EMAIL="+g.author.Email,
	)
	if c.gitDir != "" {
		env = append(env, "GIT_DIR="+c.gitDir, "GIT_COMMON_DIR="+c.commonDir)
	}
	if c.workTree != "" {
		env = append(env, "GIT_WORK_TREE="+c.workTree)
	}
	cfg := append([][2]string(nil), neutralConfig...)
	if c.gc {
		// Objects are never deleted: see mirror.gc.
		cfg = append(cfg, [2]string{"gc.pruneExpire", "never"})
	} else {
		cfg = append(cfg, [2]string{"gc.auto", "0"})
	}
	// Only network calls may use a transport, and only the configured
	// remote's: GIT_ALLOW_PROTOCOL overrides every protocol.*.allow, so a
	// URL rewritten by config cannot switch to ext:: or another scheme.
	allow := ""
	// GIT_SSH_COMMAND outranks core.sshCommand; "false" for every call that
	// has no business running ssh.
	ssh := "false"
	if c.network {
		allow = g.repo.protocol()
		switch g.repo.kind() {
		case kindHTTP:
			if u, err := url.Parse(g.repo.URL); err == nil {
				// The URL-specific key wins over a less specific one an
				// attacker might have configured for the same URL.
				cfg = append(cfg, [2]string{"http." + g.repo.URL + ".sslVerify", "true"})
				if g.repo.Token != "" {
					// Bound to the configured host: a URL rewritten to
					// another host gets no answer from this helper.
					origin := u.Scheme + "://" + u.Host
					cfg = append(cfg, [2]string{"credential." + origin + ".helper", credentialHelper})
					env = append(env, envUser+"="+g.repo.Username, envPassword+"="+g.repo.Token)
				}
			}
		case kindSSH:
			ssh = "ssh -o BatchMode=yes -o ConnectTimeout=" + fmt.Sprint(max(1, int(g.timeout/time.Second)))
			if g.repo.SSHKeyFile != "" {
				ssh += " -o IdentitiesOnly=yes -i " + shellQuote(g.repo.SSHKeyFile)
			}
			if g.repo.SSHKnownHosts != "" {
				ssh += " -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + shellQuote(g.repo.SSHKnownHosts)
			}
			cfg = append(cfg, [2]string{"core.sshCommand", ssh})
		}
	}
	env = append(env, "GIT_ALLOW_PROTOCOL="+allow, "GIT_SSH_COMMAND="+ssh)
	env = append(env, fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(cfg)))
	for i, kv := range cfg {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return append(env, c.env...)
}

// writeFileAtomic replaces path with data through a temporary file and a
// rename, so readers see the old or the new content, and a symlink planted
// at path is replaced rather than followed.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".threadsmith-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
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
	case strings.Contains(text, "dubious ownership"):
		// git refuses a repository another user owns; the bot's git reads
		// no global config, so safe.directory there does not reach it.
		return newError(CodeUnreachable, fmt.Sprintf("Could not %s repository %q: git says \"detected dubious ownership\": the repository belongs to another user than the one the bot runs as. Run the bot as the repository's owner, or make the bot's user its owner (chown -R); the bot's git reads no global git config, so a safe.directory entry there does not help.", op, name), detail)
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
