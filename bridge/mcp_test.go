package bridge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/storage"
)

func serverNames(ss []mcptool.Server) []string {
	var n []string
	for _, s := range ss {
		n = append(n, s.Name)
	}
	return n
}

// A configured server goes to the threads its repos and channels name (all
// when it names none).
func TestMCPServersForRepoAndChannel(t *testing.T) {
	t.Parallel()
	b := &Bridge{cfg: Config{MCPServers: []MCPServer{
		{Server: mcptool.Server{Name: "all"}},
		{Server: mcptool.Server{Name: "app-only"}, Repos: []string{"app"}},
		{Server: mcptool.Server{Name: "ops-channel"}, Channels: []string{"C-OPS"}},
		{Server: mcptool.Server{Name: "app-in-ops"}, Repos: []string{"app"}, Channels: []string{"C-OPS"}},
	}}}
	for _, tc := range []struct {
		repo, channel string
		want          []string
	}{
		{"app", "C-DEV", []string{"all", "app-only"}},
		{"app", "C-OPS", []string{"all", "app-only", "ops-channel", "app-in-ops"}},
		{"lib", "C-OPS", []string{"all", "ops-channel"}},
		{"lib", "C-DEV", []string{"all"}},
	} {
		th := &thread{b: b, p: &platform{}, rec: storage.Thread{Repo: tc.repo}, ref: chat.ThreadRef{Platform: "slack", Channel: tc.channel}}
		if got := serverNames(th.mcpServersFor(t.Context())); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("repo %s, channel %s: servers %v, want %v", tc.repo, tc.channel, got, tc.want)
		}
	}
	// A Discord thread is a channel of its own: the channel it lives in is
	// the one the operator names.
	th := &thread{b: b, p: &platform{Platform: Platform{Adapter: struct {
		chat.Adapter
		parents
	}{nil, parents{"TH-1": "C-OPS"}}}}, rec: storage.Thread{Repo: "lib"},
		ref: chat.ThreadRef{Platform: "discord", Channel: "TH-1", Thread: "TH-1"}}
	if got, want := serverNames(th.mcpServersFor(t.Context())), []string{"all", "ops-channel"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a thread in C-OPS on Discord: servers %v, want %v", got, want)
	}
}

// parents is an adapter whose threads live in the channels it maps them to
// (the rest of chat.Adapter is not used).
type parents map[string]string

func (p parents) ParentChannel(_ context.Context, ref chat.ThreadRef) string { return p[ref.Channel] }

func writeRepoFile(t *testing.T, root, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A repository's .threadsmith/mcp.json wins over its .mcp.json; only stdio
// servers with a valid name are taken, marked as the repository's, with
// their env exactly as written and no network; the rest is named.
func TestRepoMCPServers(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if got, err := repoMCPServers(root); got != nil || err != nil {
		t.Fatalf("no file: %v, %v", got, err)
	}
	writeRepoFile(t, root, ".mcp.json", `{"mcpServers": {"common": {"command": "c"}}}`)
	if got, err := repoMCPServers(root); err != nil || !reflect.DeepEqual(serverNames(got), []string{"common"}) {
		t.Fatalf(".mcp.json: %v, %v", serverNames(got), err)
	}
	writeRepoFile(t, root, ".threadsmith/mcp.json", `{"mcpServers": {
		"tracker": {"command": "tracker-mcp", "args": ["-v"], "env": {"TOKEN": "${OPENAI_API_KEY}"}, "network": true},
		"web": {"url": "https://mcp.example.com/mcp"},
		"bad__name": {"command": "x"}}}`)
	got, err := repoMCPServers(root)
	want := []mcptool.Server{{Name: "tracker", Command: "tracker-mcp", Args: []string{"-v"}, Env: map[string]string{"TOKEN": "${OPENAI_API_KEY}"}, FromRepo: true}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("servers %+v, want %+v", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), ".threadsmith/mcp.json: left out bad__name, web") {
		t.Errorf("err %v, want the left-out servers named", err)
	}
	writeRepoFile(t, root, ".threadsmith/mcp.json", `{"mcpServers": `)
	if _, err := repoMCPServers(root); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("broken file: %v", err)
	}
}

// The file is read inside the worktree: a symlink out of it is not followed.
func TestRepoMCPServersStayInTheWorktree(t *testing.T) {
	t.Parallel()
	outside := t.TempDir()
	writeRepoFile(t, outside, "mcp.json", `{"mcpServers": {"planted": {"command": "x"}}}`)
	root := t.TempDir()
	if err := os.Symlink(filepath.Join(outside, "mcp.json"), filepath.Join(root, ".mcp.json")); err != nil {
		t.Fatal(err)
	}
	if got, _ := repoMCPServers(root); len(got) != 0 {
		t.Errorf("followed a symlink out of the worktree: %+v", got)
	}
}

// The operator's server of a name wins over the repository's.
func TestWithRepoServersOperatorWins(t *testing.T) {
	t.Parallel()
	got := withRepoServers([]mcptool.Server{{Name: "tracker", Command: "operator"}},
		[]mcptool.Server{{Name: "tracker", Command: "repo", FromRepo: true}, {Name: "lint", Command: "lint", FromRepo: true}})
	if len(got) != 2 || got[0].Command != "operator" || got[1].Name != "lint" {
		t.Errorf("got %+v", got)
	}
}

// A repository's server may be a program in the repository (./scripts/x),
// found in its worktree, not in the bot's working directory; not one that
// leads out of it.
func TestServerPathOfARepositoryServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeRepoFile(t, root, "scripts/mcp.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(root, "scripts/mcp.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := serverPath(mcptool.Server{Command: "./scripts/mcp.sh", FromRepo: true}, root); err != nil || p != filepath.Join(root, "scripts/mcp.sh") {
		t.Errorf("./scripts/mcp.sh: %q, %v", p, err)
	}
	if _, err := serverPath(mcptool.Server{Command: "../../bin/sh", FromRepo: true}, root); err == nil || !strings.Contains(err.Error(), "leads out of the repository") {
		t.Errorf("../../bin/sh: %v", err)
	}
	// A link the agent made is followed within the worktree only.
	if err := os.Symlink("mcp.sh", filepath.Join(root, "scripts/in.sh")); err != nil {
		t.Fatal(err)
	}
	if p, err := serverPath(mcptool.Server{Command: "./scripts/in.sh", FromRepo: true}, root); err != nil || p != filepath.Join(root, "scripts/in.sh") {
		t.Errorf("./scripts/in.sh (a link to mcp.sh): %q, %v", p, err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sh, filepath.Join(root, "scripts/out.sh")); err != nil {
		t.Fatal(err)
	}
	if _, err := serverPath(mcptool.Server{Command: "./scripts/out.sh", FromRepo: true}, root); err == nil || !strings.Contains(err.Error(), "not a program in the repository") {
		t.Errorf("./scripts/out.sh (a link to %s): %v, want refused", sh, err)
	}
	if p, err := serverPath(mcptool.Server{Command: "sh", FromRepo: true}, root); err != nil || !filepath.IsAbs(p) {
		t.Errorf("sh: %q, %v, want it from PATH", p, err)
	}
}
