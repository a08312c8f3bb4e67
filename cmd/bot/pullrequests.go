package main

import (
	"log/slog"

	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/forge"
)

// pullRequests is every repository's pull request settings. A repository on
// a local path has none; one whose forge cannot be told, or without a
// token, gets the reason to tell its threads once.
func pullRequests(cfg *config.Config, log *slog.Logger) map[string]*bridge.PullRequests {
	out := map[string]*bridge.PullRequests{}
	for _, r := range cfg.Workspace.Repos {
		if r.PullRequests == config.PullRequestsOff || r.Forge == "none" || r.Forge == "bitbucket" {
			continue
		}
		fc, err := forge.Resolve(r.URL, r.Forge, r.APIURL, r.Token)
		if err != nil {
			if r.Token != "" {
				out[r.Name] = &bridge.PullRequests{Off: err.Error()}
				log.Warn("pull requests off for a repository", "repo", r.Name, "err", err)
			}
			continue // a local remote: no forge, nothing to say
		}
		client, err := forge.New(fc)
		if err != nil {
			out[r.Name] = &bridge.PullRequests{Off: "no token is configured for `" + r.Name + "` (workspace.repos[].token)"}
			continue
		}
		out[r.Name] = &bridge.PullRequests{Client: client, Draft: r.PullRequests != config.PullRequestsReady}
	}
	return out
}
