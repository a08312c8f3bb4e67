package workspace

import (
	"context"
	"slices"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

func TestSubjectsAndReviewSeen(t *testing.T) {
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
