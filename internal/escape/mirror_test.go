package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	"github.com/threadsmith/threadsmith/workspace"
)

// Thread A's bash looks for the other threads' unpushed work: B's commit the
// remote refused and the WIP commit saved when C's workspace was removed,
// through every ref, reflog and worktree record it can reach and through
// the object stores (listing them, asking for the hashes it was told). It
// finds none of it, while its own history works; and a .git file it plants
// pointing at B's repository does not make the bot record B's commit.
func TestOtherThreadsUnpushedCommitsStayHidden(t *testing.T) {
	w := newWorld(t)
	// B's push is refused by the remote.
	hook := "#!/bin/sh\nwhile read old new ref; do [ \"$ref\" = refs/heads/" + w.b.Branch() + " ] && { echo no >&2; exit 1; }; done; exit 0\n"
	if err := os.WriteFile(filepath.Join(w.remote.Path, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.b.Root(), "refused.go"), []byte("package main // b-refused-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused, err := w.b.Commit(w.ctx, workspace.CommitRequest{Request: "B's refused work"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.b.Push(w.ctx); err == nil {
		t.Fatal("B's push went through; the test needs it refused")
	}
	c, err := w.m.Open(w.ctx, "app", workspace.ThreadKey{Platform: "slack", Key: "T1:C1:1700000000.000300"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Root(), "wip.go"), []byte("package main // c-wip-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(w.ctx); err != nil {
		t.Fatal(err)
	}
	wip := strings.TrimSpace(gitremote.Git(t, c.CommonDir(), "rev-parse", c.Branch()))
	// A's own commit, not pushed yet.
	if err := os.WriteFile(filepath.Join(w.a.Root(), "mine.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine, err := w.a.Commit(w.ctx, workspace.CommitRequest{Request: "A's own unpushed commit"})
	if err != nil {
		t.Fatal(err)
	}
	w.before = w.snapshot()

	out := w.attack(fmt.Sprintf(`
		common=$(git rev-parse --git-common-dir); alt=$(cat "$common/objects/info/alternates")
		echo "log: $(git log --format=%%s -1)"; git status --short
		git for-each-ref 2>&1; git log --all --reflog --format='%%H %%s' 2>&1
		git cat-file --batch-all-objects --batch 2>&1 | grep -a secret
		git cat-file -p %[1]s 2>&1; git cat-file -p %[2]s 2>&1; git show %[1]s %[2]s 2>&1
		cat "$common/packed-refs" "$common"/logs/* "$common"/worktrees/*/HEAD 2>&1
		ls -laR "$alt/.." "$DATA/threads" %[3]q %[4]q 2>&1 | head -80
		git --git-dir="$alt/.." for-each-ref 2>&1
		git init -q /tmp/probe && GIT_ALTERNATE_OBJECT_DIRECTORIES="$alt" git -C /tmp/probe cat-file --batch-all-objects --batch 2>&1 | grep -a secret
		GIT_ALTERNATE_OBJECT_DIRECTORIES="$alt" git -C /tmp/probe cat-file -p %[1]s 2>&1
		find / -xdev \( -name packed-refs -o -name ORIG_HEAD -o -path '*/refs/heads/*' \) 2>/dev/null | head -20
		mkdir -p planted && echo "gitdir: %[5]s" > planted/.git && echo p > planted/p.txt
		echo change >> main.go; true`, refused, wip, w.b.CommonDir(), c.CommonDir(), w.b.GitDir()))
	// (The hashes are in the script, and so in git's "not a valid object"
	// answers: the commits' messages and files are what must not show.)
	for _, s := range []string{"b-refused-secret", "c-wip-secret", "B's refused work", "WIP: uncommitted"} {
		if strings.Contains(out, s) {
			t.Errorf("thread A's bash found %q:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "log: A's own unpushed commit") {
		t.Errorf("git log in thread A does not show its own commit %s:\n%s", mine, out)
	}
	w.botRuns()
	w.intact(out)
	if got := w.remote.Files(t, w.a.Branch())["main.go"]; !strings.Contains(got, "change") {
		t.Errorf("the bot did not push A's work: main.go = %q", got)
	}
	if tree := gitremote.Git(t, w.remote.Path, "ls-tree", "-r", w.a.Branch()); strings.Contains(tree, "planted") || strings.Contains(tree, refused) {
		t.Errorf("the planted .git file made the bot record B's commit:\n%s", tree)
	}
}

// A nested repository made by the agent's own git (`git init`, as `cargo
// new` does), without a commit and with one, does not stop A's commits and
// pushes.
func TestNestedRepositoriesFromTheSandbox(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`
		git init -q crate && mkdir crate/src && echo 'fn main() {}' > crate/src/main.rs
		git init -q lib && echo l > lib/l.txt && git -C lib add l.txt && git -C lib -c user.name=a -c user.email=a@b commit -qm l
		echo change >> main.go; true`)
	w.botRuns()
	w.intact(out)
	files := w.remote.Files(t, w.a.Branch())
	if !strings.Contains(files["main.go"], "change") || !strings.Contains(files["crate/src/main.rs"], "fn main") {
		t.Fatalf("the bot did not push A's work with the crate's files: %v\n%s", files, out)
	}
	if tree := gitremote.Git(t, w.remote.Path, "ls-tree", w.a.Branch(), "lib"); !strings.HasPrefix(tree, "160000 commit ") {
		t.Errorf("lib pushed as %q, want a link to its commit", tree)
	}
	// And the next run's commit as well.
	w.attack(`echo again >> crate/src/main.rs; echo more >> main.go`)
	w.botRuns()
	if got := w.remote.Files(t, w.a.Branch())["crate/src/main.rs"]; !strings.Contains(got, "again") {
		t.Errorf("the second run's change to the crate was not pushed: %q", got)
	}
}
