package main

import (
	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
)

// approvals maps workspace.repos[].push, approval (or agent.approval) and
// approvers onto the bridge's settings, by repo name: every repository has
// an entry, since its approvers may decide on plans and choose the
// repository for a thread that asks which (whatever its push mode).
func approvals(cfg *config.Config) map[string]bridge.Approval {
	out := map[string]bridge.Approval{}
	for _, r := range cfg.Workspace.Repos {
		out[r.Name] = bridge.Approval{Push: r.Push == config.PushApprove, Plan: cfg.PlanFirst(r.Name), Approvers: r.Approvers}
	}
	return out
}
