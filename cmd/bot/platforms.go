package main

import (
	"log/slog"

	discordadapter "github.com/threadsmith/threadsmith/adapters/discord"
	slackadapter "github.com/threadsmith/threadsmith/adapters/slack"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
)

// buildPlatformAdapters returns the adapters of the enabled platforms.
func buildPlatformAdapters(cfg *config.Config, log *slog.Logger) ([]chat.Adapter, error) {
	var out []chat.Adapter
	if cfg.Slack.Enabled {
		a, err := slackadapter.New(cfg.Slack, slackadapter.Options{Logger: log.With("component", "slack")})
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	if cfg.Discord.Enabled {
		a, err := discordadapter.New(cfg.Discord, discordadapter.Options{Logger: log.With("component", "discord")})
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
