package config

import "testing"

// agent.approval is every repository's unless the repository says otherwise.
func TestApprovalKeys(t *testing.T) {
	c := mustParse(t, `
agent:
  approval: Plan
workspace:
  default_repo: a
  repos:
    - {name: a, url: /srv/a}
    - {name: b, url: /srv/b, approval: none}
`, nil)
	if c.Agent.Approval != ApprovalPlan || !c.PlanFirst("a") || c.PlanFirst("b") {
		t.Errorf("agent.approval %q; plan first: a %v, b %v; want plan, true, false", c.Agent.Approval, c.PlanFirst("a"), c.PlanFirst("b"))
	}
	c = mustParse(t, `
workspace:
  default_repo: a
  repos:
    - {name: a, url: /srv/a}
    - {name: b, url: /srv/b, approval: plan}
`, nil)
	if c.Agent.Approval != ApprovalNone || c.PlanFirst("a") || !c.PlanFirst("b") {
		t.Errorf("agent.approval %q; plan first: a %v, b %v; want none, false, true", c.Agent.Approval, c.PlanFirst("a"), c.PlanFirst("b"))
	}
	v := validConfig()
	v.Agent.Approval = "always"
	v.Workspace.Repos[0].Approval = "later"
	err := v.Validate()
	wantErr(t, err, "agent.approval", "none or plan", `"always"`)
	wantErr(t, err, "workspace.repos[0].approval", "none or plan", `"later"`)
}
