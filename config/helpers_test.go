package config

import (
	"strings"
	"testing"
)

func parseString(src string, env map[string]string) (Config, error) {
	return Parse(strings.NewReader(src), envMap(env))
}

func mustParse(t *testing.T, src string, env map[string]string) Config {
	t.Helper()
	c, err := parseString(src, env)
	if err != nil {
		t.Fatalf("Parse:\n%s\nunexpected error:\n%v", src, err)
	}
	return c
}

// findErr returns the problem reported for key, or nil.
func findErr(err error, key string) *Error {
	for _, e := range AsErrors(err) {
		if e.Key == key {
			return e
		}
	}
	return nil
}

// wantErr fails unless err reports key with a reason containing every want.
func wantErr(t *testing.T, err error, key string, want ...string) *Error {
	t.Helper()
	e := findErr(err, key)
	if e == nil {
		t.Fatalf("got errors:\n%v\nwant one for key %q", err, key)
	}
	for _, w := range want {
		if !strings.Contains(e.Reason, w) {
			t.Errorf("%s: got reason %q, want it to contain %q", key, e.Reason, w)
		}
	}
	return e
}

// noErrUnder fails if err reports any key starting with prefix.
func noErrUnder(t *testing.T, err error, prefix string) {
	t.Helper()
	for _, e := range AsErrors(err) {
		if strings.HasPrefix(e.Key, prefix) {
			t.Errorf("got error %q, want none under %q", e, prefix)
		}
	}
}

// validConfig is a Config that validates: Default plus the required secrets
// and two repos.
func validConfig() Config {
	c := Default()
	c.LLM.APIKey = "sk-test"
	c.Slack.BotToken = "xoxb-test"
	c.Slack.AppToken = "xapp-test"
	c.Workspace.Repos = []Repo{
		{Name: "app", URL: "https://github.com/acme/app.git", DefaultBranch: "main"},
		{Name: "lib", URL: "/srv/git/lib.git", DefaultBranch: "trunk"},
	}
	c.Workspace.DefaultRepo = "app"
	return c
}
