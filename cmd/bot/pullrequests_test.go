package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
)

// Which repositories get pull requests, and what a thread is told when its
// repository gets none: a forge's repository without a token, or whose
// forge cannot be told, gets a reason said once; pull_requests: off, forge:
// none and a local remote get nothing (no note: the operator chose it, or
// there is no forge).
func TestPullRequestSettingsOfEachRepository(t *testing.T) {
	t.Parallel()
	cfg := &config.Config{}
	cfg.Workspace.Repos = []config.Repo{
		{Name: "draft", URL: "https://github.com/acme/app.git", Token: "t", PullRequests: config.PullRequestsDraft},
		{Name: "ready", URL: "https://gitlab.com/acme/app.git", Token: "t", PullRequests: config.PullRequestsReady},
		{Name: "default", URL: "https://codeberg.org/acme/app.git", Token: "t"},
		{Name: "notoken", URL: "https://github.com/acme/app.git", PullRequests: config.PullRequestsDraft},
		{Name: "unknown", URL: "https://git.example/acme/app.git", Token: "t", PullRequests: config.PullRequestsDraft},
		{Name: "off", URL: "https://github.com/acme/app.git", Token: "t", PullRequests: config.PullRequestsOff},
		{Name: "none", URL: "https://github.com/acme/app.git", Token: "t", Forge: "none", PullRequests: config.PullRequestsDraft},
		{Name: "local", URL: "/srv/git/app.git", PullRequests: config.PullRequestsDraft},
	}
	got := pullRequests(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, name := range []string{"draft", "ready", "default"} {
		if pr := got[name]; pr == nil || pr.Client == nil || pr.Off != "" {
			t.Errorf("%s: %+v, want a client", name, pr)
		}
	}
	if !got["draft"].Draft || got["ready"].Draft || !got["default"].Draft {
		t.Errorf("drafts: draft %v, ready %v, default %v; want true, false, true", got["draft"].Draft, got["ready"].Draft, got["default"].Draft)
	}
	if got["ready"].Client.Kind() != "gitlab" || got["default"].Client.Kind() != "gitea" {
		t.Errorf("forges: %s %s", got["ready"].Client.Kind(), got["default"].Client.Kind())
	}
	if pr := got["notoken"]; pr == nil || pr.Client != nil || !strings.Contains(pr.Off, "no token is configured for `notoken`") {
		t.Errorf("notoken: %+v, want the reason", pr)
	}
	if pr := got["unknown"]; pr == nil || pr.Client != nil || !strings.Contains(pr.Off, "cannot tell which forge") {
		t.Errorf("unknown: %+v, want the reason", pr)
	}
	for _, name := range []string{"off", "none", "local"} {
		if pr, ok := got[name]; ok {
			t.Errorf("%s: %+v, want none", name, pr)
		}
	}
}
