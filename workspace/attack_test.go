package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// These tests play the agent as an attacker with a shell in its worktree
// and no sandbox around it: it runs git as any program would (its own
// repository discovery, hooks and config honoured), writes files, replaces
// .git, plants symlinks. Each checks that nothing it wrote made the bot's
// git run a command (every planted command touches a marker file) and that
// the bot fetched and pushed only where its configuration says, only the
// thread's branch.

// markers collects the files that planted commands create when they run.
type markers struct {
	dir     string
	checked bool
}

// newMarkers also checks the markers when the test ends, so that a test
// stopped early by a failure still says which commands ran.
func newMarkers(t *testing.T) *markers {
	m := &markers{dir: t.TempDir()}
	t.Cleanup(func() {
		if !m.checked {
			m.check(t)
		}
	})
	return m
}

// cmd is a shell command that records that the command called name ran.
func (m *markers) cmd(name string) string { return "touch " + filepath.Join(m.dir, name) }

// script is an executable file that does the same, for hooks.
func (m *markers) script(t *testing.T, path, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+m.cmd(name)+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// check fails the test if any planted command ran.
func (m *markers) check(t *testing.T) {
	t.Helper()
	m.checked = true
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, e := range entries {
		ran = append(ran, e.Name())
	}
	if len(ran) > 0 {
		t.Errorf("commands the agent planted ran in the bot's git: %v", ran)
	}
}

// agentGit runs git the way the agent's bash would, in dir.
func agentGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gitremote.Git(t, dir, args...)
}

// agentConfig sets git config keys from the worktree, as `git config k v`
// typed in the agent's shell: they land in the shared mirror's config.
func agentConfig(t *testing.T, dir string, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		agentGit(t, dir, "config", "--add", kv[i], kv[i+1])
	}
}

// exercise runs every operation the bot performs on a workspace: a change
// committed, diffed and pushed, a person's push brought in by Sync, Changed
// and Unpushed along the way. It returns the pushed commit.
func exercise(t *testing.T, w *Workspace, remote *gitremote.Repo, tag string) string {
	t.Helper()
	ctx := context.Background()
	writeFile(t, w.Root(), tag+".txt", "work of "+tag+"\n")
	if changed, err := w.Changed(ctx); err != nil || !changed {
		t.Fatalf("%s: Changed = %v, %v; want true", tag, changed, err)
	}
	if _, err := w.Diff(ctx); err != nil {
		t.Fatalf("%s: Diff: %v", tag, err)
	}
	sha := mustCommit(t, w, "work of "+tag)
	if _, err := w.Unpushed(ctx); err != nil {
		t.Fatalf("%s: Unpushed: %v", tag, err)
	}
	if res := mustPush(t, w); res.SHA != sha {
		t.Fatalf("%s: pushed %s, want %s", tag, res.SHA, sha)
	}
	theirs := remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{tag + "-review.txt": "a reviewer's fix\n"}, Message: "review"})
	if res, err := w.Sync(ctx); err != nil || res.Pulled != 1 {
		t.Fatalf("%s: Sync = %+v, %v; want the reviewer's commit pulled", tag, res, err)
	}
	if head := botRev(t, w, "HEAD"); head != theirs {
		t.Errorf("%s: HEAD after Sync = %s, want %s", tag, head, theirs)
	}
	return sha
}

// botRev resolves rev as the bot's git sees it in w.
func botRev(t *testing.T, w *Workspace, rev string) string {
	t.Helper()
	out, err := w.git.out(context.Background(), w.call("rev-parse", "--verify", rev))
	if err != nil {
		t.Fatalf("rev-parse %s: %v", rev, err)
	}
	return out
}

// checkRemote fails unless the remote has only main and thread branches,
// main untouched.
func checkRemote(t *testing.T, remote *gitremote.Repo, mainTip string) {
	t.Helper()
	for _, b := range remote.Branches(t) {
		if b != "main" && !strings.HasPrefix(b, "bot/") {
			t.Errorf("remote got branch %q outside the prefix", b)
		}
	}
	if got := remote.Rev(t, "main"); got != mainTip {
		t.Errorf("remote main = %s, want it untouched at %s", got, mainTip)
	}
}

// `git config core.fsmonitor <cmd>` in one worktree writes the shared mirror
// config; the bot's `git status` in no thread runs <cmd>. The same for every
// other config key that names a command.
func TestAgentGitConfigRunsNothingInAnyThread(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	mainTip := remote.Rev(t, "main")
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	mk := newMarkers(t)
	a := e.open("app", "attacker")
	b := e.open("app", "victim")

	included := filepath.Join(t.TempDir(), "included.gitconfig")
	if err := os.WriteFile(included, []byte("[core]\n\tfsmonitor = "+mk.cmd("included-fsmonitor")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agentConfig(t, a.Root(),
		"core.fsmonitor", mk.cmd("fsmonitor"),
		"core.pager", mk.cmd("core.pager"),
		"pager.status", mk.cmd("pager.status"),
		"pager.diff", mk.cmd("pager.diff"),
		"pager.log", mk.cmd("pager.log"),
		"core.editor", mk.cmd("core.editor"),
		"sequence.editor", mk.cmd("sequence.editor"),
		"core.askPass", mk.cmd("askpass"),
		"core.sshCommand", mk.cmd("sshcommand"),
		"credential.helper", "!"+mk.cmd("credential-helper"),
		"diff.external", mk.cmd("diff.external"),
		"commit.gpgSign", "true",
		"gpg.program", mk.cmd("gpg"),
		"log.showSignature", "true",
		"core.alternateRefsCommand", mk.cmd("alternate-refs"),
		"include.path", included,
		"includeIf.gitdir:/.path", included,
		"protocol.ext.allow", "always",
		"core.worktree", t.TempDir(),
	)
	// Per-worktree config too (config.worktree in the admin dir).
	agentConfig(t, a.Root(), "extensions.worktreeConfig", "true")
	agentGit(t, a.Root(), "config", "--worktree", "core.fsmonitor", mk.cmd("worktree-fsmonitor"))
	// An alternate object store makes fetch ask core.alternateRefsCommand,
	// in the mirror and in the thread's repository.
	alt := gitremote.NewBare(t, gitremote.Options{Name: "alt", Files: map[string]string{"x": "x"}})
	writeFile(t, filepath.Join(e.m.mirrors["app"].dir, "objects", "info"), "alternates", filepath.Join(alt.Path, "objects")+"\n")
	writeFile(t, filepath.Join(a.CommonDir(), "objects", "info"), "alternates", filepath.Join(alt.Path, "objects")+"\n")

	exercise(t, a, remote, "attacker")
	exercise(t, b, remote, "victim")
	c := e.open("app", "newcomer") // worktree add and checkout
	exercise(t, c, remote, "newcomer")
	for _, w := range []*Workspace{a, b, c} {
		w.Close()
	}
	e.clock.Advance(30 * 24 * time.Hour)
	if _, err := e.m.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}

	mk.check(t)
	checkRemote(t, remote, mainTip)
	if out, err := runGitPlain(e.m.mirrors["app"].dir, "config", "--get", "core.fsmonitor"); err == nil {
		t.Errorf("mirror config still has core.fsmonitor = %q, want the bot's config restored", out)
	}
	if !strings.Contains(e.logs.String(), "config was changed outside the bot") {
		t.Errorf("no warning logged about the changed mirror config")
	}
}

// The worktree's .git is the agent's to write: the bot must not follow it,
// whatever it is, and must put it right for the agent's own git.
func TestDotGitReplacedByTheAgent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		plant func(t *testing.T, w, other *Workspace, mk *markers) (decoy string)
	}{
		{"a directory with its own config and hooks", func(t *testing.T, w, _ *Workspace, mk *markers) string {
			decoy := filepath.Join(t.TempDir(), "decoy")
			agentGit(t, "", "init", "--quiet", "--initial-branch="+w.Branch(), decoy)
			agentConfig(t, decoy, "core.fsmonitor", mk.cmd("decoy-fsmonitor"), "core.hooksPath", filepath.Join(decoy, "hooks"))
			for _, h := range []string{"pre-commit", "post-commit", "reference-transaction", "post-merge"} {
				mk.script(t, filepath.Join(decoy, "hooks", h), "decoy-"+h)
			}
			os.Remove(filepath.Join(w.Root(), ".git"))
			if err := os.Rename(filepath.Join(decoy, ".git"), filepath.Join(w.Root(), ".git")); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(w.Root(), ".git")
		}},
		{"a gitdir: line pointing elsewhere", func(t *testing.T, w, _ *Workspace, mk *markers) string {
			decoy := filepath.Join(t.TempDir(), "decoy.git")
			agentGit(t, "", "init", "--quiet", "--bare", decoy)
			agentConfig(t, decoy, "core.fsmonitor", mk.cmd("decoy-fsmonitor"), "core.bare", "false")
			writeFile(t, w.Root(), ".git", "gitdir: "+decoy+"\n")
			return decoy
		}},
		{"a symlink to another thread's admin dir", func(t *testing.T, w, other *Workspace, _ *markers) string {
			p := filepath.Join(w.Root(), ".git")
			os.Remove(p)
			if err := os.Symlink(other.GitDir(), p); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
		{"deleted", func(t *testing.T, w, _ *Workspace, _ *markers) string {
			if err := os.Remove(filepath.Join(w.Root(), ".git")); err != nil {
				t.Fatal(err)
			}
			return ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
			mainTip := remote.Rev(t, "main")
			e := newEnv(t, Repo{Name: "app", URL: remote.Path})
			ctx := context.Background()
			mk := newMarkers(t)
			w := e.open("app", "attacker")
			other := e.open("app", "other")
			writeFile(t, other.Root(), "other-wip.txt", "the other thread's uncommitted work\n")
			otherHead := agentGit(t, other.Root(), "rev-parse", "HEAD")
			base := agentGit(t, w.Root(), "rev-parse", "HEAD")

			decoy := tc.plant(t, w, other, mk)
			var decoyRefs string
			if decoy != "" {
				decoyRefs, _ = runGitPlain("", "--git-dir="+decoy, "for-each-ref")
			}

			sha := exercise(t, w, remote, "attacker")
			// Garbage collection keeps the thread's registration, though
			// its .git is gone.
			if _, err := e.m.Cleanup(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(w.GitDir(), "HEAD")); err != nil {
				t.Errorf("the thread's admin dir is gone after Cleanup: %v", err)
			}

			mk.check(t)
			checkRemote(t, remote, mainTip)
			if cs := remote.Commits(t, w.Branch()); len(cs) < 2 || cs[1].SHA != sha {
				t.Errorf("remote %s history = %v, want the bot's commit %s under the review", w.Branch(), cs, sha)
			}
			if parent := agentGit(t, remote.Path, "rev-parse", sha+"^"); parent != base {
				t.Errorf("pushed commit's parent = %s, want the thread's previous tip %s", parent, base)
			}
			if decoy != "" {
				if got, _ := runGitPlain("", "--git-dir="+decoy, "for-each-ref"); got != decoyRefs {
					t.Errorf("the decoy repository's refs changed:\n%s\nwant\n%s", got, decoyRefs)
				}
			}
			// The other thread is untouched: same commit, its work uncommitted.
			if head := agentGit(t, other.Root(), "rev-parse", "HEAD"); head != otherHead {
				t.Errorf("other thread's HEAD = %s, want %s", head, otherHead)
			}
			if changed, err := other.Changed(ctx); err != nil || !changed {
				t.Errorf("other thread Changed = %v, %v; want its uncommitted work still uncommitted", changed, err)
			}
			if remote.Rev(t, other.Branch()) != "" {
				t.Errorf("the other thread's branch was pushed")
			}

			// The next Open puts .git right for the agent's own git.
			w.Close()
			w2 := e.open("app", "attacker")
			if got := readFile(t, w2.Root(), ".git"); got != "gitdir: "+w2.GitDir()+"\n" {
				t.Errorf(".git after Open = %q, want it pointing at %s", got, w2.GitDir())
			}
			if head := agentGit(t, w2.Root(), "rev-parse", "--abbrev-ref", "HEAD"); head != w2.Branch() {
				t.Errorf("the agent's git sees branch %q, want %q", head, w2.Branch())
			}
		})
	}
}

// `git config remote.origin.url http://attacker/…` does not make the bot
// fetch from or push to there, nor send the repository token there.
func TestAgentCannotRedirectFetchOrPush(t *testing.T) {
	t.Parallel()
	const token = "ghp_REDIRECTEDtoken0987654321"
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	mainTip := remote.Rev(t, "main")
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Username: "x-access-token", Password: token})
	url := srv.Serve(t, remote)
	// The attacker's server takes anything and records every request.
	evil := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{})
	evilURL := evil.Serve(t, gitremote.NewBare(t, gitremote.Options{Name: "evil", Files: seedFiles()}))
	e := newEnv(t, Repo{Name: "app", URL: url, Token: token})
	mk := newMarkers(t)

	a := e.open("app", "attacker")
	evilHost := strings.TrimSuffix(evilURL, "/repo1.git")
	agentConfig(t, a.Root(),
		"remote.origin.url", evilURL,
		"remote.origin.pushurl", evilURL,
		"remote.origin.push", "refs/heads/*:refs/heads/*",
		"remote.origin.mirror", "true",
		"remote."+url+".url", evilURL,
		"url."+evilURL+".insteadOf", url,
		"url."+evilURL+".pushInsteadOf", url,
		"http.proxy", evilHost,
		"credential.helper", "!"+mk.cmd("credential-helper"),
		"credential."+evilHost+".helper", "!"+mk.cmd("credential-helper-evil"),
	)
	// The agent's own branch on main, for a mirror push to carry.
	agentGit(t, a.Root(), "branch", "-f", "main", "HEAD")

	exercise(t, a, remote, "attacker")
	b := e.open("app", "victim")
	exercise(t, b, remote, "victim")

	if reqs := evil.Requests(); len(reqs) > 0 {
		t.Errorf("the attacker's server got %d requests, first %q; want none", len(reqs), reqs[0])
	}
	mk.check(t)
	checkRemote(t, remote, mainTip)
	for _, w := range []*Workspace{a, b} {
		if remote.Rev(t, w.Branch()) == "" {
			t.Errorf("%s did not reach the configured remote", w.Branch())
		}
	}
	if hits := gitremote.ContainsSecret(t, e.cfg.DataDir, token); len(hits) > 0 {
		t.Errorf("token found on disk in %v", hits)
	}
}

// The mirror's config is restored before every git call, but a writer
// racing the bot (possible only without a sandbox) could change it again in
// between; the fixed-name pins and the transport and credential binding
// must hold on their own. Here the bot's runner works on a repository whose
// config it does not own at all.
func TestPinsHoldWithoutTheConfigGuard(t *testing.T) {
	t.Parallel()
	const token = "glpat-PINNEDtoken1234567890"
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	url := srv.Serve(t, remote)
	// The decoy wants the same token: it would accept a leaked one.
	decoy := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	decoyURL := decoy.Serve(t, gitremote.NewBare(t, gitremote.Options{Name: "decoy", Files: seedFiles()}))
	mk := newMarkers(t)

	repo := filepath.Join(t.TempDir(), "hostile")
	agentGit(t, "", "init", "--quiet", repo)
	agentConfig(t, repo,
		"core.fsmonitor", mk.cmd("fsmonitor"),
		"core.hooksPath", filepath.Join(repo, "evil-hooks"),
		"core.pager", mk.cmd("pager"),
		"core.alternateRefsCommand", mk.cmd("alternate-refs"),
		"credential.helper", "!"+mk.cmd("credential-helper"),
		"core.sshCommand", mk.cmd("ssh"),
		"url."+decoyURL+".insteadOf", url,
	)
	for _, h := range []string{"reference-transaction", "post-checkout", "pre-commit", "post-index-change"} {
		mk.script(t, filepath.Join(repo, "evil-hooks", h), h)
	}
	alt := gitremote.NewBare(t, gitremote.Options{Name: "alt", Files: map[string]string{"x": "x"}})
	writeFile(t, filepath.Join(repo, ".git", "objects", "info"), "alternates", filepath.Join(alt.Path, "objects")+"\n")
	writeFile(t, repo, "file.txt", "x\n")

	g := &gitRunner{author: bot, timeout: 20e9, repo: Repo{Name: "app", URL: url, Token: token, Username: "x"}, redact: redactor{token}}
	gitDir := filepath.Join(repo, ".git")
	call := func(network bool, args ...string) error {
		_, err := g.run(context.Background(), gitCall{dir: repo, gitDir: gitDir, commonDir: gitDir, workTree: repo, args: args, network: network})
		return err
	}
	// The URL rewritten to the decoy: our helper is bound to the real host,
	// so the decoy gets no token and the fetch fails.
	if err := call(true, "fetch", "--quiet", url, fetchRefSpec); err == nil {
		t.Errorf("fetch through a rewritten URL succeeded, want the decoy to get no credentials")
	}
	if got, rejected := len(decoy.Requests()), decoy.Rejected(); got == 0 || got != rejected {
		t.Errorf("decoy saw %d requests, %d without the token; want every one refused", got, rejected)
	}
	// A rewrite to a command transport is refused outright.
	agentGit(t, repo, "config", "--unset-all", "url."+decoyURL+".insteadOf")
	agentConfig(t, repo, "url.ext::sh -c "+strings.ReplaceAll(mk.cmd("ext"), " ", "% ")+".insteadOf", url, "protocol.allow", "always")
	_ = call(true, "fetch", "--quiet", url, fetchRefSpec)
	agentGit(t, repo, "config", "--remove-section", "url.ext::sh -c "+strings.ReplaceAll(mk.cmd("ext"), " ", "% "))
	if err := call(true, "fetch", "--quiet", url, fetchRefSpec); err != nil {
		t.Fatalf("fetch from the configured remote: %v", err)
	}
	for _, args := range [][]string{
		{"log", "--oneline", "-1", "refs/remotes/origin/main"},
		{"status", "--porcelain"},
		{"add", "--all"},
		{"diff", "--cached", "--stat"},
	} {
		if err := call(false, args...); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	mk.check(t)
}

// Hooks planted in the mirror's hooks folder or through core.hooksPath never
// run.
func TestPlantedHooksNeverRun(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	mainTip := remote.Rev(t, "main")
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	mk := newMarkers(t)
	a := e.open("app", "attacker")

	hooks := []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-push", "reference-transaction",
		"post-checkout", "post-merge", "pre-rebase", "post-rewrite", "post-index-change", "pre-auto-gc", "fsmonitor-watchman"}
	planted := filepath.Join(t.TempDir(), "hooks")
	for _, h := range hooks {
		mk.script(t, filepath.Join(planted, h), "hooksPath-"+h)
		if h != "pre-push" { // the bot's own guard against CLI pushes
			mk.script(t, filepath.Join(a.CommonDir(), "hooks", h), "mirror-"+h)
		}
	}
	agentConfig(t, a.Root(), "core.hooksPath", planted)

	exercise(t, a, remote, "attacker")
	// A rebase: an unpushed commit replayed onto a reviewer's.
	ctx := context.Background()
	remote.Commit(t, gitremote.Change{Branch: a.Branch(), Files: map[string]string{"theirs.txt": "theirs\n"}, Message: "theirs"})
	writeFile(t, a.Root(), "ours.txt", "ours\n")
	mustCommit(t, a, "ours")
	if res, err := a.Sync(ctx); err != nil || !res.Rebased {
		t.Fatalf("Sync = %+v, %v; want a rebase", res, err)
	}
	mustPush(t, a)
	b := e.open("app", "newcomer")
	exercise(t, b, remote, "newcomer")
	if err := b.Remove(ctx); err != nil {
		t.Fatal(err)
	}

	mk.check(t)
	checkRemote(t, remote, mainTip)
}

// .gitattributes name filter, diff and merge drivers; the commands behind
// them come from config, which the agent can write into the mirror.
func TestAttributeDriversNeverRun(t *testing.T) {
	t.Parallel()
	files := seedFiles()
	files[".gitattributes"] = "* filter=x diff=x merge=x\n"
	files["shared.txt"] = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n"
	remote := gitremote.NewBare(t, gitremote.Options{Files: files})
	mainTip := remote.Rev(t, "main")
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	mk := newMarkers(t)
	ctx := context.Background()
	a := e.open("app", "attacker")

	agentConfig(t, a.Root(),
		"filter.x.clean", mk.cmd("filter-clean"),
		"filter.x.smudge", mk.cmd("filter-smudge"),
		"filter.x.process", mk.cmd("filter-process"),
		"filter.x.required", "true",
		"diff.x.textconv", mk.cmd("diff-textconv"),
		"diff.x.command", mk.cmd("diff-command"),
		"merge.x.driver", mk.cmd("merge-driver"),
	)
	writeFile(t, filepath.Join(a.CommonDir(), "info"), "attributes", "* filter=x diff=x merge=x\n")

	exercise(t, a, remote, "attacker")
	// A three-way merge of shared.txt in a rebase would ask the merge driver.
	remote.Commit(t, gitremote.Change{Branch: a.Branch(), Files: map[string]string{"shared.txt": "one\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\n"}, Message: "theirs"})
	writeFile(t, a.Root(), "shared.txt", "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n")
	mustCommit(t, a, "ours")
	if res, err := a.Sync(ctx); err != nil || !res.Rebased {
		t.Fatalf("Sync = %+v, %v; want a rebase", res, err)
	}
	if got := readFile(t, a.Root(), "shared.txt"); got != "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\nEIGHT\n" {
		t.Errorf("shared.txt after the rebase = %q, want both edits", got)
	}
	mustPush(t, a)
	b := e.open("app", "newcomer") // a checkout: smudge
	exercise(t, b, remote, "newcomer")

	mk.check(t)
	checkRemote(t, remote, mainTip)
}

// A repository the agent makes inside the worktree (as if a submodule) has
// a config of its own: git must never be started inside it.
func TestNestedRepositoryConfigNeverRuns(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	mainTip := remote.Rev(t, "main")
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	mk := newMarkers(t)
	ctx := context.Background()
	w := e.open("app", "attacker")

	sub := filepath.Join(w.Root(), "vendor", "lib")
	agentGit(t, "", "init", "--quiet", sub)
	writeFile(t, sub, "lib.txt", "v1\n")
	agentGit(t, sub, "add", "lib.txt")
	agentGit(t, sub, "commit", "--quiet", "-m", "lib v1")
	// ignore = none asks git to look inside for changes. (update = !cmd is
	// refused by git itself when it comes from .gitmodules.)
	writeFile(t, w.Root(), ".gitmodules", "[submodule \"lib\"]\n\tpath = vendor/lib\n\turl = ./vendor/lib\n\tignore = none\n")
	sha := mustCommit(t, w, "vendor a library")
	if got := agentGit(t, w.Root(), "ls-tree", "HEAD", "vendor/lib"); !strings.HasPrefix(got, "160000 commit ") {
		t.Fatalf("vendor/lib committed as %q, want a gitlink", got)
	}

	// Now the nested repository turns hostile, and its file changes.
	agentConfig(t, sub,
		"core.fsmonitor", mk.cmd("nested-fsmonitor"),
		"filter.x.clean", mk.cmd("nested-filter-clean"),
		"filter.x.process", mk.cmd("nested-filter-process"),
		"core.hooksPath", filepath.Join(sub, ".git", "evil-hooks"),
	)
	mk.script(t, filepath.Join(sub, ".git", "evil-hooks", "post-index-change"), "nested-hook")
	writeFile(t, sub, ".gitattributes", "* filter=x\n")
	// Same size, new mtime: a git status inside has to hash the file to
	// see whether it changed, through the nested config's filter.
	writeFile(t, sub, "lib.txt", "v2\n")

	for i := range 2 {
		writeFile(t, w.Root(), "main.txt", fmt.Sprintf("more work, %d\n", i))
		if changed, err := w.Changed(ctx); err != nil || !changed {
			t.Fatalf("Changed = %v, %v; want true", changed, err)
		}
		if _, err := w.Diff(ctx); err != nil {
			t.Fatal(err)
		}
		sha = mustCommit(t, w, "more work")
		if res := mustPush(t, w); res.SHA != sha {
			t.Errorf("pushed %s, want %s", res.SHA, sha)
		}
		// The nested repository's edit stays its own: no gitlink change.
		if got := agentGit(t, w.Root(), "show", "--name-only", "--format=", sha); got != "main.txt" {
			t.Errorf("commit touched %q, want main.txt only", got)
		}
	}

	mk.check(t)
	checkRemote(t, remote, mainTip)
}

// When the agent deletes the worktree's registration in the mirror (GitDir),
// the bot registers the folder again and loses none of the work in it.
func TestLostRegistrationKeepsUncommittedWork(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	w := e.open("app", "lost")
	writeFile(t, w.Root(), "committed.txt", "committed\n")
	tip := mustCommit(t, w, "committed")
	writeFile(t, w.Root(), "new.txt", "new, never committed\n")
	writeFile(t, w.Root(), "README.md", "# edited, never committed\n")
	if err := os.Remove(filepath.Join(w.Root(), "src", "main.go")); err != nil {
		t.Fatal(err)
	}
	w.Close()

	if err := os.RemoveAll(w.GitDir()); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(w.Root(), ".git"))
	// Someone's `git worktree prune` (and gc) now has nothing to go on.
	if _, err := e.m.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}

	w2 := e.open("app", "lost")
	if got := readFile(t, w2.Root(), "new.txt"); got != "new, never committed\n" {
		t.Errorf("new.txt = %q, want the uncommitted file kept", got)
	}
	if got := readFile(t, w2.Root(), "README.md"); got != "# edited, never committed\n" {
		t.Errorf("README.md = %q, want the uncommitted edit kept", got)
	}
	if _, err := os.Stat(filepath.Join(w2.Root(), "src", "main.go")); !os.IsNotExist(err) {
		t.Errorf("src/main.go came back (err %v), want it still deleted", err)
	}
	st := agentGit(t, w2.Root(), "status", "--porcelain")
	for _, want := range []string{" M README.md", " D src/main.go", "?? new.txt"} {
		if !strings.Contains(st, want) {
			t.Errorf("the agent's git status lacks %q:\n%s", want, st)
		}
	}
	sha := mustCommit(t, w2, "the rest")
	if parent := agentGit(t, w2.Root(), "rev-parse", "HEAD^"); parent != tip {
		t.Errorf("commit's parent = %s, want the branch tip %s", parent, tip)
	}
	got := agentGit(t, w2.Root(), "show", "--name-status", "--format=", sha)
	if got != "M\tREADME.md\nA\tnew.txt\nD\tsrc/main.go" {
		t.Errorf("commit changes:\n%s\nwant README.md, new.txt and src/main.go", got)
	}

	// Remove saves uncommitted work the same way when the registration is
	// gone.
	writeFile(t, w2.Root(), "late.txt", "late work\n")
	if err := os.RemoveAll(w2.GitDir()); err != nil {
		t.Fatal(err)
	}
	if err := w2.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if out, err := runGitPlain(w2.CommonDir(), "show", w2.Branch()+":late.txt"); err != nil || out != "late work\n" {
		t.Errorf("late.txt on the branch = %q, %v; want the work saved by Remove", out, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(w2.CommonDir(), "worktrees")); len(entries) != 0 {
		t.Errorf("registrations left after Remove: %v", entries)
	}
}

// ReadOnlyGitPaths are what a sandbox mounts read-only for the agent's
// git; read-only git works in the worktree with them read-only.
func TestGitDirCommonDirAndReadOnlyGit(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	mirror := filepath.Join(e.cfg.DataDir, "mirrors", "app.git")

	// A registration planted for a thread that has no worktree yet, on
	// another branch: the bot does not take it for the thread's.
	id := threadID(ThreadKey{"slack", "ro"})
	root := filepath.Join(e.cfg.DataDir, "workspaces", "app", id)
	store := filepath.Join(e.cfg.DataDir, "threads", "app", id+".git")
	e.open("app", "warmup").Close()
	planted := filepath.Join(store, "worktrees", id)
	writeFile(t, planted, "HEAD", "ref: refs/heads/main\n")
	writeFile(t, planted, "commondir", "../..\n")
	writeFile(t, planted, "gitdir", filepath.Join(root, ".git")+"\n")

	w := e.open("app", "ro")
	if w.CommonDir() != store {
		t.Errorf("CommonDir = %q, want %q", w.CommonDir(), store)
	}
	if filepath.Dir(w.GitDir()) != filepath.Join(store, "worktrees") || !filepath.IsAbs(w.GitDir()) {
		t.Errorf("GitDir = %q, want a folder of %s/worktrees", w.GitDir(), store)
	}
	if got, want := w.ReadOnlyGitPaths(), []string{store, filepath.Join(mirror, "objects")}; !slices.Equal(got, want) {
		t.Errorf("ReadOnlyGitPaths = %v, want %v", got, want)
	}
	if got := readFile(t, w.Root(), ".git"); got != "gitdir: "+w.GitDir()+"\n" {
		t.Errorf("Root/.git = %q, want it to name GitDir", got)
	}
	if got := strings.TrimSpace(readFile(t, w.GitDir(), "gitdir")); got != filepath.Join(w.Root(), ".git") {
		t.Errorf("GitDir/gitdir = %q, want Root/.git", got)
	}
	if head := agentGit(t, w.Root(), "symbolic-ref", "HEAD"); head != "refs/heads/"+w.Branch() {
		t.Errorf("HEAD = %q, want the thread's branch", head)
	}

	writeFile(t, w.Root(), "README.md", "# changed\n")
	mustCommit(t, w, "a commit to log")
	writeFile(t, w.Root(), "README.md", "# changed again\n")
	if os.Geteuid() != 0 {
		// Read-only as the sandbox mounts them (root ignores modes).
		var dirs []string
		for _, ro := range w.ReadOnlyGitPaths() {
			filepath.WalkDir(ro, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return err
			})
		}
		for _, d := range dirs {
			os.Chmod(d, 0o555)
		}
		t.Cleanup(func() {
			for _, d := range dirs {
				os.Chmod(d, 0o755)
			}
		})
	}
	if st := agentGit(t, w.Root(), "status", "--porcelain"); st != " M README.md" {
		t.Errorf("git status = %q, want the edit", st)
	}
	if d := agentGit(t, w.Root(), "diff"); !strings.Contains(d, "+# changed again") {
		t.Errorf("git diff = %q, want the edit", d)
	}
	if l := agentGit(t, w.Root(), "log", "--format=%s", "-1"); l != "a commit to log" {
		t.Errorf("git log = %q", l)
	}
}

// stage must record exactly what `git add --all` would.
func TestStageMatchesGitAddAll(t *testing.T) {
	t.Parallel()
	files := seedFiles()
	files["dir/a.txt"] = "a\n"
	files["dir/b.txt"] = "b\n"
	files["file-to-dir"] = "f\n"
	files["dir-to-file/x"] = "x\n"
	files["tracked-but-ignored.log"] = "old\n"
	files["exec.sh"] = "#!/bin/sh\n"
	remote := gitremote.NewBare(t, gitremote.Options{Files: files})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "stage")
	r := w.Root()

	writeFile(t, r, ".gitignore", "*.log\nignored/\n")
	writeFile(t, r, "README.md", "# modified\n")
	os.Remove(filepath.Join(r, "dir", "a.txt"))
	writeFile(t, r, "dir/new.txt", "new\n")
	writeFile(t, r, "brand/new/deep.txt", "deep\n")
	os.Remove(filepath.Join(r, "file-to-dir"))
	writeFile(t, r, "file-to-dir/inside.txt", "inside\n")
	os.RemoveAll(filepath.Join(r, "dir-to-file"))
	writeFile(t, r, "dir-to-file", "now a file\n")
	writeFile(t, r, "tracked-but-ignored.log", "new\n")
	writeFile(t, r, "untracked.log", "ignored\n")
	writeFile(t, r, "ignored/x.txt", "ignored\n")
	writeFile(t, r, "with space\tand tab.txt", "odd name\n")
	writeFile(t, r, "line\nbreak.txt", "odd name\n")
	os.Chmod(filepath.Join(r, "exec.sh"), 0o755)
	os.Symlink("README.md", filepath.Join(r, "link"))
	os.MkdirAll(filepath.Join(r, "empty-dir"), 0o755)
	nested := filepath.Join(r, "nested")
	agentGit(t, "", "init", "--quiet", nested)
	writeFile(t, nested, "n.txt", "n\n")
	agentGit(t, nested, "add", "n.txt")
	agentGit(t, nested, "commit", "--quiet", "-m", "n")

	ls := func(index string) []string {
		out, err := w.git.run(context.Background(), func() gitCall {
			c := w.call("ls-files", "--stage", "-z")
			c.env = []string{"GIT_INDEX_FILE=" + index}
			return c
		}())
		if err != nil {
			t.Fatal(err)
		}
		entries := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
		sort.Strings(entries)
		return entries
	}
	ours, err := w.copyIndex()
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(ours)
	if _, err := w.stage(context.Background(), []string{"GIT_INDEX_FILE=" + ours}); err != nil {
		t.Fatal(err)
	}
	theirs, err := w.copyIndex()
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(theirs)
	addAll := w.call("add", "--all")
	addAll.env = []string{"GIT_INDEX_FILE=" + theirs}
	if _, err := w.git.run(context.Background(), addAll); err != nil {
		t.Fatal(err)
	}
	if got, want := ls(ours), ls(theirs); !slices.Equal(got, want) {
		t.Errorf("stage recorded\n%s\nwant (git add --all)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Symlinks the agent plants for the bot's own git to follow: to a secret
// file, to another thread's work, to a folder outside. The bot commits each
// as a link (its target's name), never what it points at, and pushes only
// the thread's branch.
func TestPlantedSymlinksAreCommittedAsLinks(t *testing.T) {
	t.Parallel()
	const secret = "sk-planted-1234-abcdef"
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	mainTip := remote.Rev(t, "main")
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	a := e.open("app", "attacker")
	b := e.open("app", "victim")
	outside := t.TempDir()
	writeFile(t, outside, "secret.txt", secret+"\n")
	writeFile(t, outside, "dir/inner.txt", secret+"\n")
	writeFile(t, b.Root(), "wip.txt", "the victim's "+secret+"\n")
	links := map[string]string{
		"stolen.txt": filepath.Join(outside, "secret.txt"),
		"victim.txt": filepath.Join(b.Root(), "wip.txt"),
		"outdir":     filepath.Join(outside, "dir"),
		"relative":   "../../../../" + strings.TrimPrefix(outside, "/") + "/secret.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(a.Root(), name)); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, a, "links")
	mustPush(t, a)

	files := remote.Files(t, a.Branch())
	for name, target := range links {
		if got := files[name]; got != target {
			t.Errorf("%s on the branch = %q, want the link's target %q", name, got, target)
		}
		if mode := agentGit(t, remote.Path, "ls-tree", a.Branch(), name); !strings.HasPrefix(mode, "120000 ") {
			t.Errorf("%s committed as %q, want a symlink (120000)", name, mode)
		}
	}
	for name, content := range files {
		if strings.Contains(content, secret) {
			t.Errorf("%s on the branch carries what a link points at: %q", name, content)
		}
	}
	if changed, err := b.Changed(context.Background()); err != nil || !changed {
		t.Errorf("victim Changed = %v, %v; want its work left uncommitted", changed, err)
	}
	checkRemote(t, remote, mainTip)
	if remote.Rev(t, b.Branch()) != "" {
		t.Errorf("the victim's branch was pushed")
	}
}

// A copy of the index keeps the index's time. Git trusts a file's cached
// stat data only when the file changed before the index was written; a copy
// dated now would let a same-size edit made in the index's clock tick look
// unchanged to the diff, which stages on a copy.
func TestCopiedIndexKeepsTheIndexTime(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "copy")
	index := filepath.Join(w.GitDir(), "index")
	then := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(index, then, then); err != nil {
		t.Fatal(err)
	}
	cp, err := w.copyIndex()
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(cp)
	fi, err := os.Stat(cp)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(then) {
		t.Fatalf("the copy is dated %v, the index %v", fi.ModTime(), then)
	}
}
