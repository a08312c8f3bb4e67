package workspace

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigValidationNamesTheKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no data dir", Config{Repos: []Repo{{Name: "a", URL: "/x"}}}, "data_dir"},
		{"no repos", Config{DataDir: "d"}, "repos"},
		{"bad repo name", Config{DataDir: "d", Repos: []Repo{{Name: "a/b", URL: "/x"}}}, "repos[0]: name"},
		{"duplicate name", Config{DataDir: "d", Repos: []Repo{{Name: "a", URL: "/x"}, {Name: "a", URL: "/y"}}}, "repos[1]: duplicate"},
		{"no url", Config{DataDir: "d", Repos: []Repo{{Name: "a"}}}, "url is required"},
		{"bad default branch", Config{DataDir: "d", Repos: []Repo{{Name: "a", URL: "/x", DefaultBranch: "a..b"}}}, "default_branch"},
		{"bad forge", Config{DataDir: "d", Repos: []Repo{{Name: "a", URL: "/x", Forge: "sourceforge"}}}, "forge"},
		{"missing ssh key", Config{DataDir: "d", Repos: []Repo{{Name: "a", URL: "git@h:o/r.git", SSHKeyFile: "/nonexistent/key"}}}, "ssh_key_file"},
		{"bad author", Config{DataDir: "d", Author: Identity{"a<b", "x"}, Repos: []Repo{{Name: "a", URL: "/x"}}}, "author"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("withDefaults: err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestConfigDefaultsAndURLs(t *testing.T) {
	t.Parallel()
	cfg, err := Config{DataDir: "data", Repos: []Repo{
		{Name: "gh", URL: "https://x-access-token:tok1234@github.com/acme/app.git"},
		{Name: "gl", URL: "https://gitlab.com/acme/app.git", Token: "tok5678"},
		{Name: "bb", URL: "https://tok9999@bitbucket.org/acme/app.git"},
		{Name: "rel", URL: "repos/app.git"},
		{Name: "file", URL: "file:///srv/app.git"},
		{Name: "scp", URL: "git@github.com:acme/app.git"},
	}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BranchPrefix != "bot/" || cfg.IdleTTL != 7*24*time.Hour || cfg.Author.Name != "threadsmith" || cfg.Author.Email != "threadsmith@localhost" {
		t.Errorf("defaults = prefix %q, ttl %v, author %v; want bot/, 7 days, threadsmith <threadsmith@localhost>", cfg.BranchPrefix, cfg.IdleTTL, cfg.Author)
	}
	if !filepath.IsAbs(cfg.DataDir) {
		t.Errorf("DataDir = %q, want it made absolute", cfg.DataDir)
	}
	want := map[string]struct{ url, user, token, kind string }{
		"gh":   {"https://github.com/acme/app.git", "x-access-token", "tok1234", kindHTTP},
		"gl":   {"https://gitlab.com/acme/app.git", "oauth2", "tok5678", kindHTTP},
		"bb":   {"https://bitbucket.org/acme/app.git", "x-token-auth", "tok9999", kindHTTP},
		"file": {"file:///srv/app.git", "", "", kindLocal},
		"scp":  {"git@github.com:acme/app.git", "", "", kindSSH},
	}
	for _, r := range cfg.Repos {
		if r.Name == "rel" {
			if !filepath.IsAbs(r.URL) || !strings.HasSuffix(r.URL, "repos/app.git") {
				t.Errorf("relative URL became %q, want an absolute path", r.URL)
			}
			continue
		}
		w := want[r.Name]
		got := fmt.Sprint(r.URL, " ", r.Username, " ", r.Token, " ", r.kind())
		if exp := fmt.Sprint(w.url, " ", w.user, " ", w.token, " ", w.kind); got != exp {
			t.Errorf("%s: url/user/token/kind = %q, want %q", r.Name, got, exp)
		}
	}
}

func TestErrorHelpers(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", newError(CodePushRejected, "Push rejected.", errors.New("detail")))
	if ErrorCode(err) != CodePushRejected || !errors.Is(err, ErrPushRejected) || errors.Is(err, ErrAuth) {
		t.Errorf("ErrorCode/Is on a wrapped *Error: code %q", ErrorCode(err))
	}
	if ErrorMessage(err) != "Push rejected." {
		t.Errorf("ErrorMessage = %q, want the chat message only", ErrorMessage(err))
	}
	if ErrorCode(errors.New("x")) != CodeInternal || ErrorCode(nil) != "" {
		t.Errorf("ErrorCode of foreign/nil errors wrong")
	}
	if msg := ErrorMessage(errors.New("/secret/path: boom")); strings.Contains(msg, "/secret") {
		t.Errorf("ErrorMessage leaks a foreign error's text: %q", msg)
	}
	r := redactor{"s3cr3t-token"}
	red := r.Error(errors.New("fetch https://user:s3cr3t-token@host/x failed: s3cr3t-token"))
	if strings.Contains(red.Error(), "s3cr3t") {
		t.Errorf("redacted error = %q, still has the secret", red)
	}
}

func TestCapPatch(t *testing.T) {
	t.Parallel()
	p, cut := capPatch("line1\nline2\nline3\n", 9)
	if p != "line1\n" || !cut {
		t.Errorf("capPatch = %q, %v; want the whole first line, truncated", p, cut)
	}
	if p, cut := capPatch("short\n", 100); p != "short\n" || cut {
		t.Errorf("capPatch of a short patch = %q, %v", p, cut)
	}
}
