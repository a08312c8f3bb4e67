package main

import (
	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
)

// approvals maps workspace.repos[].push and approvers onto the bridge's
// settings, by repo name; a repository that waits for nothing has no entry.
func approvals(cfg *config.Config) map[string]bridge.Approval {
	out := map[string]bridge.Approval{}
	for _, r := range cfg.Workspace.Repos {
		if r.Push == config.PushApprove {
			out[r.Name] = bridge.Approval{Push: true, Approvers: r.Approvers}
		}
	}
	return out
}
