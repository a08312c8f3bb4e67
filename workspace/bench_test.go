package workspace

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// benchFiles is the size of the benchmark repository (the size of a
// 3,887-file project).
const benchFiles = 4000

func benchManager(b *testing.B, url, token string) *Manager {
	b.Helper()
	m, err := New(Config{
		DataDir:         b.TempDir(),
		Repos:           []Repo{{Name: "app", URL: url, Token: token}},
		Author:          bot,
		CleanupInterval: -1,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// benchBranch opens a workspace of a 4,000-file repository whose branch has
// 5 commits, one changed file each.
func benchBranch(b *testing.B, thread string) *Workspace {
	b.Helper()
	remote := gitremote.NewBare(b, gitremote.Options{Files: gitremote.GenerateFiles(benchFiles)})
	ctx := context.Background()
	w, err := benchManager(b, remote.Path, "").Open(ctx, "app", ThreadKey{"bench", thread})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 5 {
		gitremote.WriteFile(b, w.Root(), fmt.Sprintf("pkg%02d/sub00/file%04d.go", i, i), "changed\n")
		if _, err := w.Commit(ctx, CommitRequest{Request: "c"}); err != nil {
			b.Fatal(err)
		}
	}
	return w
}

// BenchmarkWorkspaceReady measures the time until a new thread has a
// checked-out workspace (Manager.Open: fetch, worktree add, bookkeeping),
// against plain `git worktree add` off an equally fetched bare mirror and
// against `git clone` of the same repository over file:// and smart HTTP.
// The four run interleaved, one of each per iteration, so that the load of a
// shared machine falls on all alike; each is reported as its median in ms,
// with open/worktree-add as the ratio of the medians.
func BenchmarkWorkspaceReady(b *testing.B) {
	remote := gitremote.NewBare(b, gitremote.Options{Files: gitremote.GenerateFiles(benchFiles)})
	ctx := context.Background()
	dir := b.TempDir()

	m := benchManager(b, remote.Path, "")
	if _, err := m.Open(ctx, "app", ThreadKey{"bench", "warmup"}); err != nil { // creates the mirror
		b.Fatal(err)
	}
	mirror := filepath.Join(dir, "mirror.git")
	gitremote.Git(b, "", "init", "-q", "--bare", mirror)
	gitremote.Git(b, mirror, "config", "remote.origin.url", remote.Path)
	gitremote.Git(b, mirror, "config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
	gitremote.Git(b, mirror, "fetch", "-q", "origin")
	srv := gitremote.NewHTTPServer(b, gitremote.HTTPOptions{})
	httpURL := srv.Serve(b, remote)

	var open, add, cloneFile, cloneHTTP []time.Duration
	timed := func(into *[]time.Duration, f func()) {
		t0 := time.Now()
		f()
		*into = append(*into, time.Since(t0))
	}
	for i := 0; b.Loop(); i++ {
		ops := []func(){
			func() {
				timed(&open, func() {
					if _, err := m.Open(ctx, "app", ThreadKey{"bench", fmt.Sprint(i)}); err != nil {
						b.Fatal(err)
					}
				})
			},
			func() {
				timed(&add, func() {
					gitremote.Git(b, mirror, "worktree", "add", "-q", "--no-track", "-b", fmt.Sprintf("b%d", i),
						filepath.Join(dir, fmt.Sprintf("wt%d", i)), "origin/main")
				})
			},
			func() {
				timed(&cloneFile, func() {
					gitremote.Git(b, "", "clone", "-q", remote.URL(), filepath.Join(dir, fmt.Sprintf("cf%d", i)))
				})
			},
			func() {
				timed(&cloneHTTP, func() {
					gitremote.Git(b, "", "clone", "-q", httpURL, filepath.Join(dir, fmt.Sprintf("ch%d", i)))
				})
			},
		}
		// Rotate the order: whichever runs first after the previous
		// iteration's writes pays for their write-back.
		for k := range ops {
			ops[(i+k)%len(ops)]()
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(median(open)), "open-ms")
	b.ReportMetric(ms(median(add)), "worktree-add-ms")
	b.ReportMetric(ms(median(cloneFile)), "clone-file-ms")
	b.ReportMetric(ms(median(cloneHTTP)), "clone-http-ms")
	b.ReportMetric(float64(median(open))/float64(median(add)), "open/worktree-add")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkCommitPush measures Commit + Push of a two-file change in a
// 4,000-file workspace, to a bare repository on disk and to the
// authenticated smart-HTTP remote.
func BenchmarkCommitPush(b *testing.B) {
	remote := gitremote.NewBare(b, gitremote.Options{Files: gitremote.GenerateFiles(benchFiles)})
	srv := gitremote.NewHTTPServer(b, gitremote.HTTPOptions{Password: "bench-token"})
	httpURL := srv.Serve(b, remote)
	ctx := context.Background()
	for _, tc := range []struct{ name, url, token string }{
		{"local", remote.Path, ""},
		{"http", httpURL, "bench-token"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m := benchManager(b, tc.url, tc.token)
			w, err := m.Open(ctx, "app", ThreadKey{"bench", tc.name})
			if err != nil {
				b.Fatal(err)
			}
			var commit, push []time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				gitremote.WriteFile(b, w.Root(), "pkg00/sub00/file0000.go", fmt.Sprintf("// edit %d\n", i))
				gitremote.WriteFile(b, w.Root(), fmt.Sprintf("new/file%d.txt", i), "new\n")
				b.StartTimer()
				t0 := time.Now()
				if _, err := w.Commit(ctx, CommitRequest{Request: "two files"}); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if res, err := w.Push(ctx); err != nil || len(res.Files) != 2 {
					b.Fatalf("Push = %+v, %v; want 2 files", res, err)
				}
				commit, push = append(commit, t1.Sub(t0)), append(push, time.Since(t1))
			}
			b.ReportMetric(ms(median(commit)), "commit-ms")
			b.ReportMetric(ms(median(push)), "push-ms")
		})
	}
}

// BenchmarkCommitPushCLI is the baseline for BenchmarkCommitPush/local: the
// same change committed and pushed with the git CLI from a plain clone.
func BenchmarkCommitPushCLI(b *testing.B) {
	remote := gitremote.NewBare(b, gitremote.Options{Files: gitremote.GenerateFiles(benchFiles)})
	work := filepath.Join(b.TempDir(), "clone")
	gitremote.Git(b, "", "clone", "-q", remote.Path, work)
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		gitremote.WriteFile(b, work, "pkg00/sub00/file0000.go", fmt.Sprintf("// edit %d\n", i))
		gitremote.WriteFile(b, work, fmt.Sprintf("new/file%d.txt", i), "new\n")
		b.StartTimer()
		gitremote.Git(b, work, "add", "--all")
		gitremote.Git(b, work, "commit", "-q", "-m", "two files")
		gitremote.Git(b, work, "push", "-q", "origin", "HEAD:refs/heads/cli")
	}
}

// BenchmarkDiffStat measures Diff (stat and patch, uncommitted work
// included) of a branch with a few commits in a 4,000-file workspace, and
// plain `git diff --stat` against the merge base as the baseline.
func BenchmarkDiffStat(b *testing.B) {
	ctx := context.Background()
	w := benchBranch(b, "diff")
	gitremote.WriteFile(b, w.Root(), "uncommitted.txt", "x\n")

	b.Run("threadsmith-Diff", func(b *testing.B) {
		for b.Loop() {
			d, err := w.Diff(ctx)
			if err != nil || len(d.Stat) != 6 {
				b.Fatalf("Diff = %d files, %v; want 6", len(d.Stat), err)
			}
		}
	})
	b.Run("git-diff-stat", func(b *testing.B) {
		for b.Loop() {
			gitremote.Git(b, w.Root(), "diff", "--stat", "origin/main...HEAD")
		}
	})
}

// BenchmarkStatus backs the choice of the CLI for "anything changed?" and
// staging: git status vs go-git's Worktree.Status on a 4,000-file tree with
// one modified file.
func BenchmarkStatus(b *testing.B) {
	remote := gitremote.NewBare(b, gitremote.Options{Files: gitremote.GenerateFiles(benchFiles)})
	ctx := context.Background()
	m := benchManager(b, remote.Path, "")
	w, err := m.Open(ctx, "app", ThreadKey{"bench", "status"})
	if err != nil {
		b.Fatal(err)
	}
	gitremote.WriteFile(b, w.Root(), "pkg01/sub00/file0001.md", "changed\n")
	b.Run("git-status", func(b *testing.B) {
		for b.Loop() {
			if changed, err := w.Changed(ctx); err != nil || !changed {
				b.Fatalf("Changed = %v, %v", changed, err)
			}
		}
	})
	b.Run("go-git-Status", func(b *testing.B) {
		repo, err := w.openRepo()
		if err != nil {
			b.Fatal(err)
		}
		wt, err := repo.Worktree()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			st, err := wt.Status()
			if err != nil || st.IsClean() {
				b.Fatalf("Status clean=%v, %v", st.IsClean(), err)
			}
		}
	})
}
