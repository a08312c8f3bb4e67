package workspace

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// Each push's diff is read back from the mirror: the first from the fork
// point, a later one from the previous push; names that are not commit ids
// never reach git.
func TestCommitDiffOfEachPush(t *testing.T) {
	t.Parallel()
	remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
	e := newEnv(t, Repo{Name: "app", URL: remote.Path})
	ctx := context.Background()
	w := e.open("app", "diffs")
	writeFile(t, w.Root(), "first.txt", "one\n")
	first := mustCommit(t, w, "run 1")
	mustPush(t, w)
	writeFile(t, w.Root(), "second.txt", "two\n")
	second := mustCommit(t, w, "run 2")
	mustPush(t, w)
	w.Close()

	patch, cut, err := e.m.CommitDiff(ctx, "app", "", first)
	if err != nil || cut || !strings.Contains(patch, "+++ b/first.txt") || strings.Contains(patch, "second.txt") {
		t.Errorf("first push's diff = %q, %v, %v; want first.txt only", patch, cut, err)
	}
	patch, _, err = e.m.CommitDiff(ctx, "app", first, second)
	if err != nil || !strings.Contains(patch, "+two") || strings.Contains(patch, "first.txt") {
		t.Errorf("second push's diff = %q, %v; want second.txt only", patch, err)
	}
	for _, bad := range []string{"--output=/tmp/x", "HEAD", first + "..", "main"} {
		if _, _, err := e.m.CommitDiff(ctx, "app", "", bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CommitDiff(%q) = %v, want it refused", bad, err)
		}
	}
}
