package main

import "testing"

// -check signs in to a remote as the bot's git does: the same user name
// for a token, whatever the case of the host or a port in the URL.
func TestCheckTokenUserIsTheWorkspaces(t *testing.T) {
	for url, want := range map[string]string{
		"https://github.com/o/r.git":                "x-access-token",
		"https://GitLab.Example.com:8443/o/r.git":   "oauth2",
		"https://BitBucket.org/o/r.git":             "x-token-auth",
		"https://git.example.com/gitlab-mirror.git": "x-access-token",
	} {
		if got := tokenUser(url); got != want {
			t.Errorf("tokenUser(%q) = %q, want %q", url, got, want)
		}
	}
}
