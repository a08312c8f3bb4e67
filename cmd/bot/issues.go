package main

import (
	"log/slog"

	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/forge"
)

// issueSources is every repository whose issues open threads, with the
// forge client that reads them and the channel their threads open in.
func issueSources(cfg *config.Config, log *slog.Logger) map[string]*bridge.Issues {
	out := map[string]*bridge.Issues{}
	for _, r := range cfg.Workspace.Repos {
		if r.Issues == nil {
			continue
		}
		platform, channel, ok := r.Issues.Target(cfg)
		if !ok {
			continue // refused by -check and at start
		}
		fc, err := forge.Resolve(r.URL, r.Forge, r.APIURL, r.Token)
		if err != nil {
			log.Warn("issues off for a repository", "repo", r.Name, "err", err)
			continue
		}
		client, err := forge.New(fc)
		if err != nil {
			log.Warn("issues off for a repository", "repo", r.Name, "err", err)
			continue
		}
		out[r.Name] = &bridge.Issues{Client: client, Platform: platform, Channel: channel}
	}
	return out
}
