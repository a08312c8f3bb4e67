package workspace

import (
	"context"
	"slices"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

func TestSubjectsAndReviewSeen(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path, DefaultBranch: "main"})
	w := e.open("app", "T1")
	if s, err := w.Subjects(context.Background()); err != nil || len(s) != 0 {
		t.Fatalf("a new branch: %v, %v; want no subjects", s, err)
	}
	writeFile(t, w.Root(), "a.txt", "a")
	mustCommit(t, w, "first request\nmore lines")
	writeFile(t, w.Root(), "b.txt", "b")
	mustCommit(t, w, "second request")
	s, err := w.Subjects(context.Background())
	if err != nil || !slices.Equal(s, []string{"first request", "second request"}) {
		t.Fatalf("Subjects = %q, %v", s, err)
	}

	// The files the branch's commits changed; an uncommitted change is not
	// on the pushed branch.
	writeFile(t, w.Root(), "c.txt", "not committed")
	files, err := w.BranchFiles(context.Background())
	if err != nil || len(files) != 2 || files[0].Path != "a.txt" || files[0].Added != 1 || files[1].Path != "b.txt" {
		t.Fatalf("BranchFiles = %+v, %v; want a.txt and b.txt", files, err)
	}

	if got := w.ReviewSeen(); len(got) != 0 {
		t.Fatalf("ReviewSeen of a new workspace = %v", got)
	}
	if err := w.MarkReviewSeen([]string{"review:1", "issue:2"}); err != nil {
		t.Fatal(err)
	}
	if err := w.MarkReviewSeen([]string{"issue:2", "review:3"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Kept across a restart of the bot.
	e2 := newEnvIn(t, e.cfg.DataDir, e.clock, e.cfg.Repos...)
	e.m.Close(context.Background())
	w2 := e2.open("app", "T1")
	if got := w2.ReviewSeen(); !slices.Equal(got, []string{"review:1", "issue:2", "review:3"}) {
		t.Fatalf("ReviewSeen after a restart = %v", got)
	}
}

// BenchmarkBranchFiles measures what a pull request's description costs a
// push in a 4,000-file workspace whose branch has 5 commits: BranchFiles
// (the files changed), beside Subjects (the commits, read at every push
// before) and plain `git diff --numstat` against the merge base.
func BenchmarkBranchFiles(b *testing.B) {
	ctx := context.Background()
	w := benchBranch(b, "files")
	b.Run("BranchFiles", func(b *testing.B) {
		for b.Loop() {
			if fs, err := w.BranchFiles(ctx); err != nil || len(fs) != 5 {
				b.Fatalf("BranchFiles = %d files, %v; want 5", len(fs), err)
			}
		}
	})
	b.Run("Subjects", func(b *testing.B) {
		for b.Loop() {
			if s, err := w.Subjects(ctx); err != nil || len(s) != 5 {
				b.Fatalf("Subjects = %d, %v; want 5", len(s), err)
			}
		}
	})
	b.Run("git-diff-numstat", func(b *testing.B) {
		for b.Loop() {
			gitremote.Git(b, w.Root(), "diff", "--numstat", "origin/main...HEAD")
		}
	})
}

// Without a merge base with the default branch (unrelated histories; here
// the default branch's ref is gone), every file of the branch is listed.
func TestBranchFilesWithoutAMergeBase(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path, DefaultBranch: "main"})
	w := e.open("app", "T1")
	writeFile(t, w.Root(), "a.txt", "a\nb\n")
	mustCommit(t, w, "first request")
	gitremote.Git(t, w.CommonDir(), "update-ref", "-d", "refs/remotes/origin/main")
	files, err := w.BranchFiles(context.Background())
	if err != nil || len(files) != len(seedFiles())+1 {
		t.Fatalf("BranchFiles = %+v, %v; want the %d seed files and a.txt", files, err, len(seedFiles()))
	}
	for _, f := range files {
		if f.Path == "a.txt" && f.Added != 2 {
			t.Errorf("a.txt: %+v", f)
		}
	}
}
