package workspace

import "testing"

func TestTokenUserByHost(t *testing.T) {
	for host, want := range map[string]string{
		"github.com":            "x-access-token",
		"gitlab.com":            "oauth2",
		"GitLab.Example.com":    "oauth2",
		"bitbucket.org":         "x-token-auth",
		"git.example.com":       "x-access-token",
		"gitea.example.com":     "x-access-token",
		"code.BITBUCKET.corp.x": "x-token-auth",
	} {
		if got := TokenUser(host); got != want {
			t.Errorf("TokenUser(%q) = %q, want %q", host, got, want)
		}
	}
}
