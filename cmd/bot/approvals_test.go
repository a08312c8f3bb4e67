package main

import (
	"slices"
	"testing"

	"github.com/threadsmith/threadsmith/config"
)

// A repository's approvers reach the bridge whatever its push mode: they
// choose it for a thread that asks which, and approve its pushes where
// they wait.
func TestApprovalsCarryApproversOfEveryRepository(t *testing.T) {
	cfg := &config.Config{}
	cfg.Workspace.Repos = []config.Repo{
		{Name: "app", Push: config.PushApprove, Approvers: []string{"U1"}},
		{Name: "web", Approvers: []string{"U2"}},
		{Name: "lib"},
	}
	got := approvals(cfg)
	if a := got["app"]; !a.Push || !slices.Equal(a.Approvers, []string{"U1"}) {
		t.Errorf("app = %+v, want pushes waiting for U1", a)
	}
	if a := got["web"]; a.Push || !slices.Equal(a.Approvers, []string{"U2"}) {
		t.Errorf("web = %+v, want U2 as approver and pushes by themselves", a)
	}
	if a := got["lib"]; a.Push || a.Plan || len(a.Approvers) > 0 || len(got) != 3 {
		t.Errorf("approvals = %+v, want lib waiting for nothing, with no approvers", got)
	}
}
