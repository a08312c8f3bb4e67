package config

import (
	"strings"
	"testing"
)

// One repository needs no workspace.default_repo: it is the default. With
// several the file may name none: a thread that names no repository then
// chooses one in the chat.
func TestOneRepositoryIsTheDefault(t *testing.T) {
	const base = "llm: {api_key: sk-x}\nslack: {bot_token: xoxb-x, app_token: xapp-x}\n"
	c, err := Parse(strings.NewReader(base+"workspace:\n  repos:\n    - {name: app, url: /srv/app}\n"), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.Workspace.DefaultRepo != "app" {
		t.Fatalf("one repository: default_repo %q, %v; want app, valid", c.Workspace.DefaultRepo, err)
	}
	c, err = Parse(strings.NewReader(base+"workspace:\n  repos:\n    - {name: app, url: /srv/app}\n    - {name: lib, url: /srv/lib}\n"), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || c.Workspace.DefaultRepo != "" {
		t.Fatalf("two repositories without default_repo: default_repo %q, %v; want none, valid", c.Workspace.DefaultRepo, err)
	}
}
