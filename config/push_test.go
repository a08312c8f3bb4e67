package config

import (
	"slices"
	"testing"
)

func TestRepoPushKeys(t *testing.T) {
	c := mustParse(t, `
workspace:
  default_repo: a
  repos:
    - {name: a, url: /srv/a, push: Approve, approvers: [U0BOB, "123456789012345678"]}
    - {name: b, url: /srv/b}
`, nil)
	if r := c.Workspace.Repos[0]; r.Push != PushApprove || !slices.Equal(r.Approvers, []string{"U0BOB", "123456789012345678"}) {
		t.Errorf("repo a push = %q, approvers %q", r.Push, r.Approvers)
	}
	if r := c.Workspace.Repos[1]; r.Push != PushAuto || r.Approvers != nil {
		t.Errorf("repo b push = %q, approvers %q; want the default auto and none", r.Push, r.Approvers)
	}
	v := validConfig()
	v.Workspace.Repos[0].Push = "manual"
	v.Workspace.Repos[0].Approvers = []string{"U1", " "}
	err := v.Validate()
	wantErr(t, err, "workspace.repos[0].push", "auto or approve", `"manual"`)
	wantErr(t, err, "workspace.repos[0].approvers[1]", "user id")
}
