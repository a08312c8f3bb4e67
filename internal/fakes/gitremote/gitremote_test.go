package gitremote

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBareSeedAndCommit(t *testing.T) {
	r := NewBare(t, Options{Files: map[string]string{"a.txt": "A\n", "dir/b c.txt": "B\n", "ü.txt": "U\n"}})
	files := r.Files(t, "main")
	want := map[string]string{"a.txt": "A", "dir/b c.txt": "B", "ü.txt": "U"}
	for p, c := range want {
		if files[p] != c {
			t.Errorf("file %q = %q, want %q", p, files[p], c)
		}
	}
	if len(files) != len(want) {
		t.Errorf("got %d files, want %d: %v", len(files), len(want), files)
	}

	sha := r.Commit(t, Change{Branch: "feature", Files: map[string]string{"new.txt": "N\n"}, Delete: []string{"a.txt"},
		Message: "feature work\n\nbody", Name: "Ann", Email: "ann@example.com"})
	if got := r.Rev(t, "feature"); got != sha {
		t.Errorf("feature = %s, want %s", got, sha)
	}
	cs := r.Commits(t, "feature")
	if len(cs) != 2 || cs[0].Subject() != "feature work" || cs[0].AuthorEmail != "ann@example.com" {
		t.Errorf("commits = %+v, want 2 with newest 'feature work' by ann", cs)
	}
	if _, ok := r.Files(t, "feature")["a.txt"]; ok {
		t.Errorf("a.txt still on feature after delete")
	}
	if got, want := r.Branches(t), []string{"feature", "main"}; !slices.Equal(got, want) {
		t.Errorf("branches = %v, want %v", got, want)
	}
}

func TestHTTPCloneAndPushWithAuth(t *testing.T) {
	r := NewBare(t, Options{Files: map[string]string{"a.txt": "A\n"}})
	srv := NewHTTPServer(t, HTTPOptions{Username: "x-access-token", Password: "s3cret"})
	url := srv.Serve(t, r)

	work := filepath.Join(t.TempDir(), "w")
	if _, err := run("", nil, nil, "clone", "--quiet", url, work); err == nil {
		t.Fatalf("clone without credentials succeeded, want 401")
	}
	if srv.Rejected() == 0 {
		t.Errorf("server rejected %d requests, want > 0", srv.Rejected())
	}

	helper := "!f() { echo username=x-access-token; echo password=s3cret; }; f"
	authEnv := []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=" + helper}
	GitInput(t, "", nil, authEnv, "clone", "--quiet", url, work)
	// A push larger than http.postBuffer is sent chunked; the server must cope.
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < 1<<20 {
		fmt.Fprintf(&b, "%016x\n", rng.Uint64())
	}
	WriteFile(t, work, "big.txt", b.String())
	Git(t, work, "add", "-A")
	Git(t, work, "commit", "--quiet", "-m", "big")
	GitInput(t, work, nil, append(authEnv, "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_1=http.postBuffer", "GIT_CONFIG_VALUE_1=65536"),
		"push", "--quiet", "origin", "HEAD:refs/heads/big")
	if got := r.Files(t, "big")["big.txt"]; len(got) < 1<<20 {
		t.Errorf("big.txt on remote has %d bytes, want > 1 MiB", len(got))
	}
}

func TestSSHCloneAndPush(t *testing.T) {
	r := NewBare(t, Options{Files: map[string]string{"a.txt": "A\n"}})
	srv := NewSSHServer(t)
	url := srv.URL(r)
	sshCmd := func(key string) []string {
		return []string{"GIT_SSH_COMMAND=ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -i " + key +
			" -o UserKnownHostsFile=" + srv.KnownHosts + " -o StrictHostKeyChecking=yes"}
	}
	work := filepath.Join(t.TempDir(), "w")
	if _, err := run("", nil, sshCmd(srv.OtherKeyFile), "clone", "--quiet", url, work); err == nil {
		t.Fatalf("clone with an unknown key succeeded, want it refused")
	}
	GitInput(t, "", nil, sshCmd(srv.KeyFile), "clone", "--quiet", url, work)
	WriteFile(t, work, "b.txt", "B\n")
	Git(t, work, "add", "-A")
	Git(t, work, "commit", "--quiet", "-m", "b")
	GitInput(t, work, nil, sshCmd(srv.KeyFile), "push", "--quiet", "origin", "HEAD:refs/heads/viassh")
	if got := r.Files(t, "viassh")["b.txt"]; got != "B" {
		t.Errorf("b.txt on remote = %q, want B", got)
	}
}
