package workspace

import (
	"strings"
	"testing"
)

func TestCompareURL(t *testing.T) {
	t.Parallel()
	const base, head = "main", "bot/slack-17-ab"
	tests := []struct {
		remote, forge, want string
	}{
		// GitHub
		{"https://github.com/acme/app.git", "", "https://github.com/acme/app/compare/main...bot/slack-17-ab"},
		{"https://github.com/acme/app", "", "https://github.com/acme/app/compare/main...bot/slack-17-ab"},
		{"https://x-access-token:secret@github.com/acme/app.git", "", "https://github.com/acme/app/compare/main...bot/slack-17-ab"},
		{"git@github.com:acme/app.git", "", "https://github.com/acme/app/compare/main...bot/slack-17-ab"},
		{"ssh://git@github.com/acme/app.git", "", "https://github.com/acme/app/compare/main...bot/slack-17-ab"},
		{"ssh://git@github.com:22/acme/app.git", "", "https://github.com/acme/app/compare/main...bot/slack-17-ab"},
		{"https://github.example.com/acme/app.git", "", "https://github.example.com/acme/app/compare/main...bot/slack-17-ab"},
		// GitLab, nested groups
		{"https://gitlab.com/group/sub/app.git", "", "https://gitlab.com/group/sub/app/-/compare/main...bot/slack-17-ab"},
		{"git@gitlab.com:group/app.git", "", "https://gitlab.com/group/app/-/compare/main...bot/slack-17-ab"},
		{"ssh://git@gitlab.corp.example:2222/group/app.git", "", "https://gitlab.corp.example/group/app/-/compare/main...bot/slack-17-ab"},
		// Bitbucket Cloud: source branch first, %0D, destination
		{"https://bitbucket.org/team/app.git", "", "https://bitbucket.org/team/app/branches/compare/bot/slack-17-ab%0Dmain"},
		{"git@bitbucket.org:team/app.git", "", "https://bitbucket.org/team/app/branches/compare/bot/slack-17-ab%0Dmain"},
		// Gitea, Forgejo, Codeberg
		{"https://gitea.com/org/app.git", "", "https://gitea.com/org/app/compare/main...bot/slack-17-ab"},
		{"https://codeberg.org/org/app.git", "", "https://codeberg.org/org/app/compare/main...bot/slack-17-ab"},
		{"ssh://git@git.gitea.internal/org/app.git", "", "https://git.gitea.internal/org/app/compare/main...bot/slack-17-ab"},
		{"https://forgejo.example.org/org/app", "", "https://forgejo.example.org/org/app/compare/main...bot/slack-17-ab"},
		// http keeps its scheme and port
		{"http://gitea.local:3000/org/app.git", "", "http://gitea.local:3000/org/app/compare/main...bot/slack-17-ab"},
		// forge override for a self-hosted instance with a neutral name
		{"https://git.example.com/org/app.git", "gitlab", "https://git.example.com/org/app/-/compare/main...bot/slack-17-ab"},
		{"git@code.example.com:org/app.git", "gitea", "https://code.example.com/org/app/compare/main...bot/slack-17-ab"},
		{"https://github.com/acme/app.git", "none", ""},
		// unknown host, local remotes
		{"https://git.example.com/org/app.git", "", ""},
		{"/srv/git/app.git", "", ""},
		{"file:///srv/git/app.git", "", ""},
		{"https://github.com/", "", ""},
	}
	for _, tt := range tests {
		if got := CompareURL(tt.remote, tt.forge, base, head); got != tt.want {
			t.Errorf("CompareURL(%q, %q) = %q, want %q", tt.remote, tt.forge, got, tt.want)
		}
	}
	if got, want := CompareURL("https://github.com/a/b", "", "main", "bot/a b#c"), "https://github.com/a/b/compare/main...bot/a%20b%23c"; got != want {
		t.Errorf("CompareURL escapes = %q, want %q", got, want)
	}
}

func TestCommitMessage(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 30)
	tests := []struct {
		name string
		req  CommitRequest
		want string
	}{
		{"subject, link, co-author",
			CommitRequest{Request: "  Fix the login bug\nand add tests", ThreadLink: "https://slack.example/archives/C1/p17", CoAuthor: Identity{"Ann Lee", "ann@example.com"}},
			"Fix the login bug\n\nhttps://slack.example/archives/C1/p17\n\nCo-authored-by: Ann Lee <ann@example.com>\n"},
		{"first non-empty line", CommitRequest{Request: "\n\n  rename   foo  \n"}, "rename foo\n"},
		{"no email, no trailer", CommitRequest{Request: "x", CoAuthor: Identity{Name: "Ann"}}, "x\n"},
		{"name from email", CommitRequest{Request: "x", CoAuthor: Identity{Email: "bob@example.com"}}, "x\n\nCo-authored-by: bob <bob@example.com>\n"},
		{"angle brackets dropped from name", CommitRequest{Request: "x", CoAuthor: Identity{"<evil>\nname", "e@x.io"}}, "x\n\nCo-authored-by: evil name <e@x.io>\n"},
		{"empty request", CommitRequest{}, "Changes requested in a chat thread\n"},
		{"long subject trimmed", CommitRequest{Request: long}, strings.TrimSpace(long)[:71] + "…\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CommitMessage(tt.req); got != tt.want {
				t.Errorf("CommitMessage = %q, want %q", got, tt.want)
			}
		})
	}
	if s := Subject(strings.Repeat("é", 100)); len([]rune(s)) != maxSubject {
		t.Errorf("Subject of 100 runes has %d runes, want %d", len([]rune(s)), maxSubject)
	}
}
