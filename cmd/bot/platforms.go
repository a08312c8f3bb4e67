package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	discordadapter "github.com/threadsmith/threadsmith/adapters/discord"
	slackadapter "github.com/threadsmith/threadsmith/adapters/slack"
	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/backoff"
	"github.com/threadsmith/threadsmith/ops"
)

// platformHooks are what the bot's operation needs of the adapters.
type platformHooks struct {
	// metrics count every API call and 429 through the adapters' transports.
	metrics *ops.Metrics
	// slackListener serves Slack's Events API when it shares http.listen.
	slackListener net.Listener
	// sleep is the clock of Slack's reconnect backoff (nil: real time).
	sleep func(ctx context.Context, d time.Duration) bool
}

// buildPlatformAdapters returns the adapters of the enabled platforms.
func buildPlatformAdapters(cfg *config.Config, log *slog.Logger, hooks platformHooks) ([]chat.Adapter, error) {
	var out []chat.Adapter
	if cfg.Slack.Enabled {
		opts := slackadapter.Options{Logger: log.With("component", "slack"), Listener: hooks.slackListener}
		if hooks.metrics != nil {
			// The adapter's own default, plus counting: the outbox makes
			// several calls at once to one host.
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.MaxIdleConnsPerHost = 16
			opts.HTTPClient = &http.Client{Transport: hooks.metrics.Transport(config.PlatformSlack, tr)}
		}
		a, err := slackadapter.New(slackAdapterConfig(cfg.Slack), opts)
		if err != nil {
			return nil, err
		}
		sleep := hooks.sleep
		if sleep == nil {
			sleep = backoff.Sleep
		}
		out = append(out, retryingSlack{Adapter: a, log: opts.Logger, sleep: sleep})
	}
	if cfg.Discord.Enabled {
		opts := discordadapter.Options{Logger: log.With("component", "discord"), Commands: bridge.Commands()}
		if hooks.metrics != nil {
			opts.Transport = hooks.metrics.Transport(config.PlatformDiscord, nil)
		}
		a, err := discordadapter.New(discordAdapterConfig(cfg.Discord), opts)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// slackAdapterConfig maps the slack section of the configuration file onto
// the Slack adapter's Config (its defaults and validation are config's).
func slackAdapterConfig(c config.Slack) slackadapter.Config {
	return slackadapter.Config{
		Mode:          slackadapter.Mode(c.Mode),
		BotToken:      c.BotToken,
		AppToken:      c.AppToken,
		SigningSecret: c.SigningSecret,
		Listen:        c.Listen,
		APIURL:        c.APIURL,
		AgentSessions: c.AgentSessions,
		Streaming:     c.Streaming == "auto",
	}
}

// discordAdapterConfig maps the discord section of the configuration file
// onto the Discord adapter's Config (its defaults and validation are
// config's).
func discordAdapterConfig(c config.Discord) discordadapter.Config {
	return discordadapter.Config{
		Token:         c.Token,
		ApplicationID: c.ApplicationID,
		GuildIDs:      c.GuildIDs,
		APIURL:        c.APIURL,
		AllowedUsers:  c.AllowedUsers,
		AllowedRoles:  c.AllowedRoles,
		ShardID:       c.ShardID,
		ShardCount:    c.ShardCount,
	}
}
