package main

import (
	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
)

// approvals maps workspace.repos[].push and approvers onto the bridge's
// settings, by repo name; a repository that waits for nothing and names no
// approvers has no entry. Approvers also choose the repository for a
// thread that asks which (whatever its push mode).
func approvals(cfg *config.Config) map[string]bridge.Approval {
	out := map[string]bridge.Approval{}
	for _, r := range cfg.Workspace.Repos {
		if r.Push == config.PushApprove || len(r.Approvers) > 0 {
			out[r.Name] = bridge.Approval{Push: r.Push == config.PushApprove, Approvers: r.Approvers}
		}
	}
	return out
}
