package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

func TestPushRejectedWhenRemoteMovedThenRetried(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()

	w := e.open("app", "moved")
	writeFile(t, w.Root(), "a.txt", "bot run 1\n")
	first := mustCommit(t, w, "run 1")
	mustPush(t, w)
	w.Close()

	// A reviewer pushes to the thread's branch.
	human := remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{"review.txt": "fix from review\n"}, Message: "review fix"})

	// The next run started before the bot saw it (no Open in between).
	writeFile(t, w.Root(), "b.txt", "bot run 2\n")
	second := mustCommit(t, w, "run 2")
	_, err := w.Push(ctx)
	if !errors.Is(err, ErrPushRejected) {
		t.Fatalf("Push after the remote moved: err = %v, want ErrPushRejected", err)
	}
	msg := ErrorMessage(err)
	if !strings.Contains(msg, w.Branch()) || !strings.Contains(msg, second[:7]) || !strings.Contains(msg, gitremote.DefaultName) {
		t.Errorf("message = %q, want the branch, the kept commit %s and who pushed", msg, second[:7])
	}
	// Nothing lost: the remote keeps the reviewer's commit, we keep ours.
	if got := remote.Rev(t, w.Branch()); got != human {
		t.Errorf("remote branch = %s, want the reviewer's %s untouched", got, human)
	}
	if head, _ := runGitPlain(w.Root(), "rev-parse", "HEAD"); strings.TrimSpace(head) != second {
		t.Errorf("local HEAD = %s, want our commit %s", head, second)
	}

	// Next run: Open brings the reviewer's commit in, the retry succeeds.
	w2 := e.open("app", "moved")
	if got := readFile(t, w2.Root(), "review.txt"); got != "fix from review\n" {
		t.Errorf("review.txt after reopen = %q, want the reviewer's file", got)
	}
	res := mustPush(t, w2)
	if res.Forced || res.Commits != 1 {
		t.Errorf("PushResult = %+v, want a fast-forward of 1 commit", res)
	}
	hist := remote.Commits(t, w.Branch())
	subjects := []string{}
	for _, c := range hist {
		subjects = append(subjects, c.Subject())
	}
	if want := []string{"run 2", "review fix", "run 1", "Initial commit"}; !slices.Equal(subjects, want) {
		t.Errorf("remote history = %v, want %v", subjects, want)
	}
	if hist[2].SHA != first || hist[1].SHA != human {
		t.Errorf("published commits were rewritten: history %v, want run 1 = %s and review = %s kept", hist, first, human)
	}
	files := remote.Files(t, w.Branch())
	if files["a.txt"] != "bot run 1" || files["b.txt"] != "bot run 2" || files["review.txt"] != "fix from review" {
		t.Errorf("remote files = %v, want everyone's work", files)
	}
}

func TestPushRejectedOnConflictKeepsBothSides(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "conflict")
	writeFile(t, w.Root(), "a.txt", "v1\n")
	mustCommit(t, w, "v1")
	mustPush(t, w)
	w.Close()
	human := remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{"a.txt": "human\n"}, Message: "human edit"})
	writeFile(t, w.Root(), "a.txt", "bot\n")
	ours := mustCommit(t, w, "bot edit")

	// Reopen: the rebase conflicts, is aborted, and the branch is left alone.
	w2 := e.open("app", "conflict")
	if head, _ := runGitPlain(w2.Root(), "rev-parse", "HEAD"); strings.TrimSpace(head) != ours {
		t.Errorf("HEAD after a conflicting reopen = %s, want our commit %s", head, ours)
	}
	if _, err := os.Stat(filepath.Join(w2.Root(), ".git")); err != nil {
		t.Fatal(err)
	}
	if st, _ := runGitPlain(w2.Root(), "status", "--porcelain"); strings.TrimSpace(st) != "" {
		t.Errorf("work tree after aborted rebase is dirty: %q", st)
	}
	if _, err := w2.Push(context.Background()); !errors.Is(err, ErrPushRejected) {
		t.Errorf("Push: err = %v, want ErrPushRejected", err)
	}
	if got := remote.Rev(t, w.Branch()); got != human {
		t.Errorf("remote branch = %s, want %s", got, human)
	}
}

func TestForcePushOnlyOverBotCommits(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	key := ThreadKey{Platform: "slack", Key: "force"}
	branch := BranchName("bot/", key)

	w, err := e.m.Open(context.Background(), "app", key)
	if err != nil {
		t.Fatal(err)
	}
	// The remote branch has a commit our branch lacks, made by the bot itself
	// (say, from an earlier install whose data dir was lost).
	stale := remote.Commit(t, gitremote.Change{Branch: branch, From: "main", Files: map[string]string{"old.txt": "old\n"},
		Message: "old bot work", Name: bot.Name, Email: bot.Email})
	writeFile(t, w.Root(), "new.txt", "new\n")
	ours := mustCommit(t, w, "new bot work")

	res := mustPush(t, w)
	if !res.Forced || res.SHA != ours {
		t.Errorf("PushResult = %+v, want a forced push of %s", res, ours)
	}
	if got := remote.Rev(t, branch); got != ours {
		t.Errorf("remote branch = %s, want %s (replacing the bot's own %s)", got, ours, stale)
	}
	if !slices.ContainsFunc(res.Files, func(f FileStat) bool { return f.Path == "old.txt" && f.Deleted == 1 }) {
		t.Errorf("PushResult.Files = %+v, want old.txt shown as removed from the remote branch", res.Files)
	}
}

func TestNeverPushesOutsidePrefix(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	mainTip := remote.Rev(t, "main")
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	w := e.open("app", "prefix")

	// The agent's bash makes a commit on its own branch and on main.
	gitremote.Git(t, w.Root(), "checkout", "-q", "-b", "feature")
	writeFile(t, w.Root(), "f.txt", "feature\n")
	gitremote.Git(t, w.Root(), "add", "-A")
	gitremote.Git(t, w.Root(), "commit", "-q", "-m", "feature")
	gitremote.Git(t, w.Root(), "branch", "-f", "main", "HEAD")

	// Its own pushes fail, to the remote's configured URL or named directly.
	for _, args := range [][]string{
		{"push", "origin", "feature", "main"},
		{"push", remote.Path, "feature"},
		{"push", remote.URL(), "HEAD:refs/heads/main"},
	} {
		// As the agent's bash would run it: hooks are not disabled.
		if out, err := gitremote.TryGit(w.Root(), args...); err == nil {
			t.Errorf("git %v from the workspace succeeded (%s), want it refused", args, out)
		}
	}

	if _, err := w.Commit(ctx, CommitRequest{Request: "x"}); !errors.Is(err, ErrWrongBranch) {
		t.Errorf("Commit off the thread's branch: err = %v, want ErrWrongBranch", err)
	} else if msg := ErrorMessage(err); !strings.Contains(msg, "feature") || !strings.Contains(msg, w.Branch()) {
		t.Errorf("message = %q, want both branch names", msg)
	}
	res, err := w.Push(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Branch != w.Branch() {
		t.Errorf("pushed %s, want %s", res.Branch, w.Branch())
	}
	for _, b := range remote.Branches(t) {
		if b != "main" && !strings.HasPrefix(b, "bot/") {
			t.Errorf("remote got branch %q outside the prefix", b)
		}
	}
	if got := remote.Rev(t, "main"); got != mainTip {
		t.Errorf("remote main = %s, want it untouched at %s", got, mainTip)
	}

	// A prefix that would cover the default branch still never pushes it:
	// the guard checks the branch itself.
	w.branch = "main"
	if _, err := w.Push(ctx); !errors.Is(err, ErrForbidden) {
		t.Errorf("Push of the default branch: err = %v, want ErrForbidden", err)
	}
	w.branch = "elsewhere/x"
	if _, err := w.Push(ctx); !errors.Is(err, ErrForbidden) {
		t.Errorf("Push outside the prefix: err = %v, want ErrForbidden", err)
	}
}

func TestHTTPRemoteTokenNeverOnDiskOrInErrors(t *testing.T) {
	t.Parallel()
	const token = "ghp_TOPSECRETtoken1234567890"
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Username: "x-access-token", Password: token})
	url := srv.Serve(t, remote)

	// Token in the URL (a common copy-paste) and in the token field.
	withUserinfo := strings.Replace(url, "http://", "http://x-access-token:"+token+"@", 1)
	e := newEnv(t,
		Repo{Name: "app", URL: url, Token: token},
		Repo{Name: "pasted", URL: withUserinfo},
	)
	ctx := context.Background()
	for _, name := range []string{"app", "pasted"} {
		w, err := e.m.Open(ctx, name, ThreadKey{"slack", "secret"})
		if err != nil {
			t.Fatalf("Open(%s): %v", name, err)
		}
		writeFile(t, w.Root(), name+".txt", "x\n")
		mustCommit(t, w, "via http")
		res := mustPush(t, w)
		if res.Commits != 1 {
			t.Errorf("%s: PushResult = %+v, want 1 commit", name, res)
		}
		w.Close()
		cfgURL, _ := runGitPlain(w.Root(), "config", "--get", "remote.origin.url")
		if strings.TrimSpace(cfgURL) != url {
			t.Errorf("%s: remote.origin.url = %q, want %q without credentials", name, cfgURL, url)
		}
	}
	if remote.Rev(t, BranchName("bot/", ThreadKey{"slack", "secret"})) == "" {
		t.Fatalf("nothing reached the HTTP remote")
	}
	if srv.Rejected() == 0 {
		t.Logf("note: git sent credentials preemptively")
	}
	if hits := gitremote.ContainsSecret(t, e.cfg.DataDir, token); len(hits) > 0 {
		t.Errorf("token found on disk in %v", hits)
	}
	if strings.Contains(e.logs.String(), token) {
		t.Errorf("token found in the logs")
	}

	// A wrong token: clear errors, no token in them, commits kept.
	e2 := newEnv(t, Repo{Name: "app", URL: url, Token: "wrong-" + token})
	_, err := e2.m.Open(ctx, "app", ThreadKey{"slack", "bad"})
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Open with a bad token: err = %v, want ErrAuth", err)
	}
	if strings.Contains(err.Error(), token) || strings.Contains(ErrorMessage(err), "wrong-") {
		t.Errorf("error text contains the token: %v", err)
	}
	if !strings.Contains(ErrorMessage(err), "token") || !strings.Contains(ErrorMessage(err), `"app"`) {
		t.Errorf("message = %q, want it to name the repository and the token", ErrorMessage(err))
	}
}

func TestFailedPushIsRetriedByTheNextPush(t *testing.T) {
	t.Parallel()
	const token = "glpat-right-token-0987654321"
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: token})
	url := srv.Serve(t, remote)
	dataDir := t.TempDir()
	clock := newFakeClock()
	ctx := context.Background()

	good := newEnvIn(t, dataDir, clock, Repo{Name: "app", URL: url, Token: token})
	w := good.open("app", "retry")
	w.Close()
	if err := good.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The token is rotated wrongly: the push fails, the commit stays.
	bad := newEnvIn(t, dataDir, clock, Repo{Name: "app", URL: url, Token: "expired-token-1234"})
	wb := bad.open("app", "retry") // reuse works offline-tolerant: fetch failure is only logged
	writeFile(t, wb.Root(), "x.txt", "x\n")
	sha := mustCommit(t, wb, "work")
	_, err := wb.Push(ctx)
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("Push with a bad token: err = %v, want ErrAuth", err)
	}
	if n, err := wb.Unpushed(ctx); err != nil || n != 1 {
		t.Errorf("Unpushed after a failed push = %d, %v; want 1", n, err)
	}
	if strings.Contains(err.Error(), "expired-token-1234") {
		t.Errorf("error contains the token: %v", err)
	}
	if !strings.Contains(bad.logs.String(), "working offline") {
		t.Errorf("the failed fetch at Open was not logged")
	}
	wb.Close()
	if err := bad.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Fixed: the next push sends the kept commit.
	fixed := newEnvIn(t, dataDir, clock, Repo{Name: "app", URL: url, Token: token})
	wf := fixed.open("app", "retry")
	res := mustPush(t, wf)
	if res.SHA != sha || res.Commits != 1 {
		t.Errorf("PushResult = %+v, want the kept commit %s", res, sha)
	}
	if got := remote.Rev(t, wf.Branch()); got != sha {
		t.Errorf("remote = %s, want %s", got, sha)
	}
	if n, err := wf.Unpushed(ctx); err != nil || n != 0 {
		t.Errorf("Unpushed after the retry = %d, %v; want 0", n, err)
	}
}

func TestUnreachableRemoteFailsFast(t *testing.T) {
	// Not parallel: git must start and fail within a 500 ms timeout, a wall
	// time that tests running beside it would stretch.
	silent := gitremote.Blackhole(t)
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{Password: "tok-123456"})
	url := srv.Serve(t, remote)

	e := newEnv(t,
		Repo{Name: "silent", URL: silent, Token: "tok-123456"},
		Repo{Name: "refused", URL: "http://127.0.0.1:1/x.git"},
		Repo{Name: "app", URL: url, Token: "tok-123456"},
	)
	e.m.cfg.GitTimeout = 500 * time.Millisecond
	for _, r := range e.m.mirrors {
		r.git.timeout = 500 * time.Millisecond
	}
	ctx := context.Background()

	start := time.Now()
	_, err := e.m.Open(ctx, "silent", ThreadKey{"slack", "1"})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(ErrorMessage(err), "did not answer within 500ms") {
		t.Errorf("Open of a silent remote: err = %v, want ErrUnreachable naming the timeout", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Open of a silent remote took %v, want about the 500ms timeout", d)
	}
	_, err = e.m.Open(ctx, "refused", ThreadKey{"slack", "1"})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(ErrorMessage(err), "could not be reached") {
		t.Errorf("Open of a refused remote: err = %v, want ErrUnreachable", err)
	}

	// A push whose remote goes silent also times out: point the mirror at
	// the black hole after opening.
	w := e.open("app", "later")
	writeFile(t, w.Root(), "x.txt", "x\n")
	sha := mustCommit(t, w, "x")
	e.m.mirrors["app"].repo.URL = silent
	gitremote.Git(t, e.m.mirrors["app"].dir, "config", "remote.origin.url", silent)
	start = time.Now()
	_, err = w.Push(ctx)
	if !errors.Is(err, ErrUnreachable) {
		t.Errorf("Push to a silent remote: err = %v, want ErrUnreachable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Push to a silent remote took %v, want about the timeout", d)
	}
	if head, _ := runGitPlain(w.Root(), "rev-parse", "HEAD"); strings.TrimSpace(head) != sha {
		t.Errorf("HEAD = %s after a failed push, want the commit %s kept", head, sha)
	}
}

func TestSSHRemoteWithKeyFile(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	srv := gitremote.NewSSHServer(t)
	url := srv.URL(remote)
	e := newEnv(t,
		Repo{Name: "app", URL: url, SSHKeyFile: srv.KeyFile, SSHKnownHosts: srv.KnownHosts},
		Repo{Name: "wrongkey", URL: url, SSHKeyFile: srv.OtherKeyFile, SSHKnownHosts: srv.KnownHosts},
	)
	ctx := context.Background()

	w := e.open("app", "ssh") // git CLI over ssh
	writeFile(t, w.Root(), "ssh.txt", "over ssh\n")
	sha := mustCommit(t, w, "via ssh")
	res := mustPush(t, w) // git CLI over ssh, too
	if res.SHA != sha || !res.Created {
		t.Errorf("PushResult = %+v, want the new branch at %s", res, sha)
	}
	if got := remote.Files(t, w.Branch())["ssh.txt"]; got != "over ssh" {
		t.Errorf("ssh.txt on remote = %q, want %q", got, "over ssh")
	}

	_, err := e.m.Open(ctx, "wrongkey", ThreadKey{"slack", "ssh"})
	if !errors.Is(err, ErrAuth) {
		t.Errorf("Open with a key the server refuses: err = %v, want ErrAuth", err)
	}

	// A push with a refused key is an auth error too, and keeps the commit.
	writeFile(t, w.Root(), "more.txt", "more\n")
	sha = mustCommit(t, w, "more")
	setKey := func(file string) {
		mr := e.m.mirrors["app"]
		mr.repo.SSHKeyFile, mr.git.repo.SSHKeyFile = file, file
	}
	setKey(srv.OtherKeyFile)
	if _, err := w.Push(ctx); !errors.Is(err, ErrAuth) {
		t.Errorf("Push with a refused key: err = %v, want ErrAuth", err)
	}
	setKey(srv.KeyFile)
	if res := mustPush(t, w); res.SHA != sha || res.Commits != 1 {
		t.Errorf("retry PushResult = %+v, want %s with 1 commit", res, sha)
	}
}

func TestCommitsDroppedByAPersonStayDropped(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	w := e.open("app", "rewrite")
	writeFile(t, w.Root(), "unwanted.txt", "x\n")
	dropped := mustCommit(t, w, "unwanted")
	mustPush(t, w)
	w.Close()

	// A reviewer rewrites the branch: the bot's commit goes, theirs comes.
	remote.SetBranch(t, w.Branch(), remote.Rev(t, "main"))
	human := remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{"better.txt": "y\n"}, Message: "better"})
	writeFile(t, w.Root(), "next.txt", "z\n")
	mustCommit(t, w, "next")
	if _, err := w.Push(context.Background()); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("Push over a person's rewrite: err = %v, want ErrPushRejected", err)
	}

	w2 := e.open("app", "rewrite")
	mustPush(t, w2)
	var subjects []string
	for _, c := range remote.Commits(t, w.Branch()) {
		subjects = append(subjects, c.Subject())
		if c.SHA == dropped {
			t.Errorf("the dropped commit %s came back", dropped)
		}
	}
	if want := []string{"next", "better", "Initial commit"}; !slices.Equal(subjects, want) {
		t.Errorf("remote history = %v, want %v (only the unpushed commit replayed onto %s)", subjects, want, human[:7])
	}
	if _, err := os.Stat(filepath.Join(w2.Root(), "unwanted.txt")); !os.IsNotExist(err) {
		t.Errorf("unwanted.txt is back in the workspace (err %v)", err)
	}
}

func TestSyncBringsInOthersCommitsForAWorkspaceKeptOpen(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	w := e.open("app", "kept-open") // held across runs, as the chat bridge does

	if res, err := w.Sync(ctx); err != nil || res != (SyncResult{}) {
		t.Errorf("Sync with nothing new = %+v, %v; want zero", res, err)
	}
	writeFile(t, w.Root(), "a.txt", "a\n")
	mustCommit(t, w, "a")
	mustPush(t, w)
	eve := remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{"eve.txt": "eve\n"}, Name: "Eve", Email: "eve@example.com", Message: "eve"})
	writeFile(t, w.Root(), "b.txt", "b\n")
	mustCommit(t, w, "b")
	if _, err := w.Push(ctx); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("Push: err = %v, want ErrPushRejected", err)
	}

	// Next run: Sync first, then the push of the kept commit succeeds.
	res, err := w.Sync(ctx)
	if err != nil || res != (SyncResult{Pulled: 1, Rebased: true}) {
		t.Errorf("Sync = %+v, %v; want 1 commit pulled and ours rebased", res, err)
	}
	if got := readFile(t, w.Root(), "eve.txt"); got != "eve\n" {
		t.Errorf("eve.txt = %q, want Eve's file in the workspace", got)
	}
	if n, _ := w.Unpushed(ctx); n != 1 {
		t.Errorf("Unpushed after Sync = %d, want 1 (b)", n)
	}
	if p := mustPush(t, w); p.Commits != 1 || p.Forced {
		t.Errorf("Push after Sync = %+v, want 1 commit, not forced", p)
	}
	if cs := remote.Commits(t, w.Branch()); cs[1].SHA != eve || cs[0].Subject() != "b" {
		t.Errorf("remote history = %v, want b on top of Eve's %s", cs, eve)
	}

	// A pure fast-forward.
	remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{"eve2.txt": "2\n"}, Message: "eve 2"})
	if res, err := w.Sync(ctx); err != nil || res != (SyncResult{Pulled: 1}) {
		t.Errorf("Sync = %+v, %v; want a fast-forward of 1", res, err)
	}

	// Conflicting changes: reported, nothing touched.
	remote.Commit(t, gitremote.Change{Branch: w.Branch(), Files: map[string]string{"a.txt": "eve's a\n"}, Message: "eve 3"})
	writeFile(t, w.Root(), "a.txt", "bot's a\n")
	ours := mustCommit(t, w, "bot a")
	res, err = w.Sync(ctx)
	if err != nil || !res.Diverged || res.Pulled != 0 {
		t.Errorf("Sync with a conflict = %+v, %v; want Diverged", res, err)
	}
	if head := gitremote.Git(t, w.Root(), "rev-parse", "HEAD"); head != ours {
		t.Errorf("HEAD = %s after a conflicting Sync, want ours %s", head, ours)
	}
}
