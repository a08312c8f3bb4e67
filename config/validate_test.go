package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateAcceptsValidConfigs(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
	}{
		{"base", func(*Config) {}},
		{"http mode", func(c *Config) {
			c.Slack.Mode, c.Slack.AppToken, c.Slack.SigningSecret, c.Slack.Listen = SlackHTTP, "", "s3cret", "127.0.0.1:8080"
		}},
		{"discord too", func(c *Config) {
			c.Discord.Enabled, c.Discord.Token = true, "discord-token"
			c.Discord.GuildIDs, c.Discord.ApplicationID = []string{"123456789012345678"}, "42"
			c.Discord.APIURL = "http://127.0.0.1:9999" // BaseURL adds the slash
			c.Discord.Channels = map[string]ChannelRepos{"1": {"lib"}}
		}},
		{"no platform", func(c *Config) { c.Slack = Slack{} }},
		{"no repos", func(c *Config) { c.Workspace.Repos, c.Workspace.DefaultRepo = nil, "" }},
		{"local model server without key", func(c *Config) { c.LLM.APIKey, c.LLM.BaseURL = "", "http://127.0.0.1:11434/v1" }},
		{"localhost without key", func(c *Config) { c.LLM.APIKey, c.LLM.BaseURL = "", "http://localhost:8080/v1" }},
		{"ipv6 loopback without key", func(c *Config) { c.LLM.APIKey, c.LLM.BaseURL = "", "http://[::1]:8080/v1" }},
		{"repo url kinds", func(c *Config) {
			c.Workspace.Repos = []Repo{
				{Name: "a", URL: "file:///srv/git/a.git", DefaultBranch: "main"},
				{Name: "b", URL: "git@github.com:acme/b.git", DefaultBranch: "release/v1.2"},
				{Name: "c", URL: "ssh://git@example.com/c.git", DefaultBranch: "main", SSHKeyFile: "/keys/id"},
				{Name: "d", URL: "../d", DefaultBranch: "main"},
				{Name: "e.f_g-h", URL: "http://127.0.0.1:3000/e.git", DefaultBranch: "main", Token: "t"},
			}
			c.Workspace.DefaultRepo = "b"
		}},
		{"retry disabled", func(c *Config) { c.Agent.Retry = Retry{} }},
		{"compaction disabled", func(c *Config) { c.Agent.Compaction.Enabled = false }},
		{"channels and access lists", func(c *Config) {
			c.Slack.Channels = map[string]ChannelRepos{"C1": {"app"}, "C2": {"lib", "app"}, "C3": {"app", AnyRepo}}
			c.Slack.AllowedUsers, c.Slack.AllowedChannels = []string{"U1"}, []string{"C1"}
			c.Slack.APIURL = "http://127.0.0.1:9000/api/"
		}},
		{"more models", func(c *Config) {
			c.LLM.Models = []Model{{Name: "small", ContextWindow: 32000, MaxOutputTokens: 4000, Price: Price{Input: 0.1}}}
		}},
		{"prefixes", func(c *Config) { c.Workspace.BranchPrefix = "threadsmith." }},
		{"session pages", func(c *Config) {
			c.HTTP = HTTP{Listen: "127.0.0.1:9090", PublicURL: "https://bot.example.com/", SessionKey: strings.Repeat("k", 32), LinkTTL: time.Hour, AuthHeader: "X-Forwarded-User"}
		}},
		{"bash env", func(c *Config) { c.Agent.BashEnv = map[string]string{"GOFLAGS": "-mod=mod", "_X1": ""} }},
	}
	for _, tt := range tests {
		c := validConfig()
		tt.mutate(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: got\n%v\nwant no problem", tt.name, err)
		}
	}
}

func TestValidateRules(t *testing.T) {
	tests := []struct {
		mutate func(*Config)
		key    string
		want   string
	}{
		{func(c *Config) { c.DataDir = "" }, "data_dir", "must not be empty"},
		{func(c *Config) { c.ShutdownGrace = 0 }, "shutdown_grace", "positive duration"},
		{func(c *Config) { c.RunTimeout = -time.Second }, "run_timeout", "positive duration"},
		{func(c *Config) { c.IdleEvict = 0 }, "idle_evict", "positive duration"},
		{func(c *Config) { c.MaxConcurrentRuns = 0 }, "max_concurrent_runs", "must be at least 1"},
		{func(c *Config) { c.Log.Level = "verbose" }, "log.level", `must be debug, info, warn or error (got "verbose")`},
		{func(c *Config) { c.Log.Format = "xml" }, "log.format", "must be auto, json or text"},
		{func(c *Config) { c.HTTP.Listen, c.HTTP.PublicURL = ":9090", "https://bot.example.com" }, "http.session_key", "required with http.public_url"},
		{func(c *Config) {
			c.HTTP.PublicURL, c.HTTP.SessionKey = "https://bot.example.com", strings.Repeat("k", 32)
		}, "http.public_url", "needs http.listen"},
		{func(c *Config) { c.HTTP.Listen, c.HTTP.PublicURL = ":9090", "bot.example.com" }, "http.public_url", "http(s) URL"},
		{func(c *Config) { c.HTTP.SessionKey = "short" }, "http.session_key", "at least 32 characters"},
		{func(c *Config) { c.HTTP.LinkTTL = 0 }, "http.link_ttl", "must be positive"},
		{func(c *Config) { c.HTTP.AuthHeader = "X User" }, "http.auth_header", "header name"},

		{func(c *Config) { c.LLM.BaseURL = "api.openai.com/v1" }, "llm.base_url", "absolute http(s) URL"},
		{func(c *Config) { c.LLM.BaseURL = "ftp://example.com/v1" }, "llm.base_url", "absolute http(s) URL"},
		{func(c *Config) { c.LLM.APIKey = "" }, "llm.api_key", "write api_key: ${OPENAI_API_KEY} under llm: and set OPENAI_API_KEY"},
		{func(c *Config) { c.LLM.APIKey, c.LLM.BaseURL = "", "http://localhost.example.com/v1" }, "llm.api_key", "loopback"},
		{func(c *Config) { c.LLM.Model = " " }, "llm.model", "must not be empty"},
		{func(c *Config) { c.LLM.MaxOutputTokens = 0 }, "llm.max_output_tokens", "must be greater than 0"},
		{func(c *Config) { c.LLM.ContextWindow = 8192 }, "llm.context_window", "must be greater than llm.max_output_tokens (8192)"},
		{func(c *Config) { c.LLM.ContextWindow = 10000 }, "agent.compaction.reserve_tokens", "must be less than llm.context_window (10000)"},
		{func(c *Config) { c.LLM.Models = []Model{{Name: "m", ContextWindow: 16000, MaxOutputTokens: 10}} }, "llm.models[0].context_window", "must be greater than agent.compaction.reserve_tokens (16384)"},
		{func(c *Config) { c.LLM.Price.Input = -1 }, "llm.price.input", "must not be negative"},
		{func(c *Config) { c.LLM.Price.CacheWrite = -0.5 }, "llm.price.cache_write", "must not be negative"},
		{func(c *Config) { c.LLM.Models = []Model{{ContextWindow: 1000, MaxOutputTokens: 10}} }, "llm.models[0].name", "must not be empty"},
		{func(c *Config) {
			c.LLM.Models = []Model{{Name: "m", ContextWindow: 64000, MaxOutputTokens: 10}, {Name: "m", ContextWindow: 64000, MaxOutputTokens: 10}}
		}, "llm.models[1].name", `"m" is listed twice`},
		{func(c *Config) { c.LLM.Models = []Model{{Name: "gpt-4.1", ContextWindow: 64000, MaxOutputTokens: 10}} }, "llm.models[0].name", "always available"},
		{func(c *Config) { c.LLM.Models = []Model{{Name: "m", ContextWindow: 8000, MaxOutputTokens: 8000}} }, "llm.models[0].context_window", "must be greater than llm.models[0].max_output_tokens (8000)"},
		{func(c *Config) { c.LLM.Models = []Model{{Name: "m", ContextWindow: 64000}} }, "llm.models[0].max_output_tokens", "must be greater than 0"},
		{func(c *Config) {
			c.LLM.Models = []Model{{Name: "m", ContextWindow: 64000, MaxOutputTokens: 10, Price: Price{Output: -1}}}
		}, "llm.models[0].price.output", "must not be negative"},

		{func(c *Config) { c.Agent.BusyMode = "eager" }, "agent.busy_mode", `must be followUp or steer (got "eager")`},
		{func(c *Config) { c.Agent.SteerMode = "some" }, "agent.steer_mode", "must be one-at-a-time or all"},
		{func(c *Config) { c.Agent.FollowUpMode = "" }, "agent.follow_up_mode", "must be one-at-a-time or all"},
		{func(c *Config) { c.Agent.Retry.MaxRetries = -1 }, "agent.retry.max_retries", "must not be negative"},
		{func(c *Config) { c.Agent.Retry.BaseDelay = 0 }, "agent.retry.base_delay", "positive duration"},
		{func(c *Config) { c.Agent.Retry.MaxDelay = time.Second }, "agent.retry.max_delay", "must be at least agent.retry.base_delay (2s)"},
		{func(c *Config) { c.Agent.Compaction.ReserveTokens = 0 }, "agent.compaction.reserve_tokens", "must be greater than 0"},
		{func(c *Config) { c.Agent.Compaction.ReserveTokens = 128000 }, "agent.compaction.reserve_tokens", "must be less than llm.context_window (128000)"},
		{func(c *Config) { c.Agent.Compaction.KeepRecentTokens = 0 }, "agent.compaction.keep_recent_tokens", "must be greater than 0"},
		{func(c *Config) { c.Agent.BashTimeout = 0 }, "agent.bash_timeout", "positive duration"},
		{func(c *Config) { c.Agent.NotifyAfter = -time.Second }, "agent.notify_after", "or 0s to mention nobody (got -1s)"},
		{func(c *Config) { c.Agent.SkillsDirs = []string{""} }, "agent.skills_dirs[0]", "must not be empty"},
		{func(c *Config) { c.Agent.PromptsDirs = []string{"a", " "} }, "agent.prompts_dirs[1]", "must not be empty"},
		{func(c *Config) { c.Agent.BashEnv = map[string]string{"BAD-NAME": "x"} }, "agent.bash_env.BAD-NAME", "not a valid environment variable name"},

		{func(c *Config) { c.Workspace.BranchPrefix = "" }, "workspace.branch_prefix", "must not be empty"},
		{func(c *Config) { c.Workspace.BranchPrefix = "bot x/" }, "workspace.branch_prefix", "must not contain spaces"},
		{func(c *Config) { c.Workspace.BranchPrefix = "bot..x/" }, "workspace.branch_prefix", `must not contain ".."`},
		{func(c *Config) { c.Workspace.BranchPrefix = "-bot/" }, "workspace.branch_prefix", `must not start with "-"`},
		{func(c *Config) { c.Workspace.BranchPrefix = "/bot/" }, "workspace.branch_prefix", `must not start with "/"`},
		{func(c *Config) { c.Workspace.BranchPrefix = "bot//" }, "workspace.branch_prefix", `must not contain "//"`},
		{func(c *Config) { c.Workspace.BranchPrefix = "bot@{x/" }, "workspace.branch_prefix", `must not contain "@{"`},
		{func(c *Config) { c.Workspace.BranchPrefix = "bot/.x" }, "workspace.branch_prefix", `may start with "."`},
		{func(c *Config) { c.Workspace.BranchPrefix = "bot.lock/" }, "workspace.branch_prefix", `may end with ".lock"`},
		{func(c *Config) { c.Workspace.BranchPrefix = "bot\t/" }, "workspace.branch_prefix", "control characters"},
		{func(c *Config) { c.Workspace.Author.Name = "" }, "workspace.author.name", "must not be empty"},
		{func(c *Config) { c.Workspace.Author.Email = "a<b>" }, "workspace.author.email", "must not contain '<'"},
		{func(c *Config) { c.Workspace.IdleTTL = 0 }, "workspace.idle_ttl", "positive duration"},
		{func(c *Config) { c.Workspace.MaxDownloadBytes = 0 }, "workspace.max_download_bytes", "must be greater than 0"},
		{func(c *Config) { c.Workspace.Repos[1].Name = "" }, "workspace.repos[1].name", "must not be empty"},
		{func(c *Config) { c.Workspace.Repos[1].Name = "my repo" }, "workspace.repos[1].name", "letters, digits"},
		{func(c *Config) { c.Workspace.Repos[1].Name = "../x" }, "workspace.repos[1].name", "letters, digits"},
		{func(c *Config) { c.Workspace.Repos[1].Name = "app" }, "workspace.repos[1].name", `"app" is used by two repos`},
		{func(c *Config) { c.Workspace.Repos[0].URL = "" }, "workspace.repos[0].url", "must not be empty"},
		{func(c *Config) { c.Workspace.Repos[0].URL = "ftp://host/a.git" }, "workspace.repos[0].url", `scheme "ftp" is not supported`},
		{func(c *Config) { c.Workspace.Repos[0].URL = "https:///a.git" }, "workspace.repos[0].url", "has no host"},
		{func(c *Config) { c.Workspace.Repos[0].URL = "file://" }, "workspace.repos[0].url", "has no path"},
		{func(c *Config) { c.Workspace.Repos[0].URL = "https://user:pw@github.com/a.git" }, "workspace.repos[0].url", "must not contain credentials"},
		{func(c *Config) { c.Workspace.Repos[0].URL = "https://ghp_tok@github.com/a.git" }, "workspace.repos[0].url", "must not contain credentials"},
		{func(c *Config) { c.Workspace.Repos[0].URL = "ssh://git:pw@example.com/a.git" }, "workspace.repos[0].url", "must not contain credentials"},
		{func(c *Config) { c.Workspace.Repos[0].DefaultBranch = "" }, "workspace.repos[0].default_branch", "must not be empty"},
		{func(c *Config) { c.Workspace.Repos[0].DefaultBranch = "main branch" }, "workspace.repos[0].default_branch", "spaces"},
		{func(c *Config) { c.Workspace.Repos[0].DefaultBranch = "feature/" }, "workspace.repos[0].default_branch", `must not end with "/"`},
		{func(c *Config) { c.Workspace.Repos[0].DefaultBranch = "x.lock" }, "workspace.repos[0].default_branch", `must not end with ".lock"`},
		{func(c *Config) { c.Workspace.Repos[0].DefaultBranch = "v1." }, "workspace.repos[0].default_branch", `must not end with "."`},
		{func(c *Config) { c.Workspace.Repos[0].DefaultBranch = "@" }, "workspace.repos[0].default_branch", `must not be "@"`},
		{func(c *Config) { c.Workspace.Repos[0].DefaultBranch = "a:b" }, "workspace.repos[0].default_branch", `must not contain ':'`},
		{func(c *Config) { c.Workspace.DefaultRepo = "nope" }, "workspace.default_repo", `"nope" is not a configured repo (one of: app, lib)`},
		{func(c *Config) { c.Workspace.Repos = nil }, "workspace.default_repo", `"app" is not a configured repo (workspace.repos is empty)`},

		{func(c *Config) { c.Slack.Channels = map[string]ChannelRepos{"C1": {"app"}, "C2": {"nope"}} }, "slack.channels.C2", `"nope" is not a configured repo`},
		{func(c *Config) { c.Slack.Channels = map[string]ChannelRepos{"C1": {"app", "nope"}} }, "slack.channels.C1", `"nope" is not a configured repo`},
		{func(c *Config) { c.Slack.Channels = map[string]ChannelRepos{"C1": {AnyRepo, "app"}} }, "slack.channels.C1", "the first entry is the channel's repository"},
		{func(c *Config) { c.Slack.Channels = map[string]ChannelRepos{"C1": {}} }, "slack.channels.C1", "must name a repository"},
		{func(c *Config) { c.Slack.Mode = "rtm" }, "slack.mode", `must be socket or http (got "rtm")`},
		{func(c *Config) { c.Slack.BotToken = "" }, "slack.bot_token", "required when slack.enabled is true"},
		{func(c *Config) { c.Slack.BotToken = "xoxp-user" }, "slack.bot_token", `must start with "xoxb-"`},
		{func(c *Config) { c.Slack.AppToken = "" }, "slack.app_token", "required in socket mode"},
		{func(c *Config) { c.Slack.AppToken = "xoxb-wrong" }, "slack.app_token", `must start with "xapp-"`},
		{func(c *Config) { c.Slack.Mode = SlackHTTP }, "slack.signing_secret", "required in http mode"},
		{func(c *Config) { c.Slack.Mode, c.Slack.SigningSecret, c.Slack.Listen = SlackHTTP, "s", "" }, "slack.listen", "required in http mode"},
		{func(c *Config) { c.Slack.Mode, c.Slack.SigningSecret, c.Slack.Listen = SlackHTTP, "s", "3000" }, "slack.listen", "host:port"},
		{func(c *Config) { c.HTTP.Listen = "9090" }, "http.listen", "host:port"},
		{func(c *Config) { c.Slack.APIURL = "http://127.0.0.1:9000/api" }, "slack.api_url", `must end with "/"`},
		{func(c *Config) { c.Slack.APIURL = "slack.local/api/" }, "slack.api_url", "absolute http(s) URL"},
		{func(c *Config) { c.Slack.AllowedUsers = []string{"U1", ""} }, "slack.allowed_users[1]", "must not be empty"},
		{func(c *Config) { c.Slack.Streaming = "on" }, "slack.streaming", `must be auto or off (got "on")`},
		{func(c *Config) { c.Slack.AllowedChannels = []string{""} }, "slack.allowed_channels[0]", "must not be empty"},
		{func(c *Config) { c.Slack.Rate.PostPerSecond = 0 }, "slack.rate.post_per_second", "must be greater than 0"},
		{func(c *Config) { c.Slack.Rate.PostBurst = 0 }, "slack.rate.post_burst", "must be greater than 0"},
		{func(c *Config) { c.Slack.Rate.UpdatePerMessagePerSecond = -1 }, "slack.rate.update_per_message_per_second", "must be greater than 0"},
		{func(c *Config) { c.Slack.Rate.UpdatePerMinute = 0 }, "slack.rate.update_per_minute", "must be greater than 0"},
		{func(c *Config) { c.Slack.Rate.StatusPerMinute = 0 }, "slack.rate.status_per_minute", "must be greater than 0"},
		{func(c *Config) { c.Slack.Rate.AppendPerMinute = 0 }, "slack.rate.append_per_minute", "must be greater than 0"},

		{func(c *Config) { c.Discord.Enabled = true }, "discord.token", "required when discord.enabled is true"},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.ApplicationID = true, "t", "abc" }, "discord.application_id", "must be a numeric id"},
		{func(c *Config) {
			c.Discord.Enabled, c.Discord.Token, c.Discord.GuildIDs = true, "t", []string{"1", "x"}
		}, "discord.guild_ids[1]", "numeric guild id"},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.APIURL = true, "t", "discord.local" }, "discord.api_url", "absolute http(s) URL"},
		{func(c *Config) {
			c.Discord.Enabled, c.Discord.Token, c.Discord.Channels = true, "t", map[string]ChannelRepos{"1": {"nope"}}
		}, "discord.channels.1", `"nope" is not a configured repo`},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.AllowedRoles = true, "t", []string{""} }, "discord.allowed_roles[0]", "must not be empty"},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.AllowedUsers = true, "t", []string{""} }, "discord.allowed_users[0]", "must not be empty"},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.Rate.EditsPer5s = true, "t", 0 }, "discord.rate.edits_per_5s", "must be greater than 0"},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.ShardCount = true, "t", -1 }, "discord.shard_count", "must be 0"},
		{func(c *Config) {
			c.Discord.Enabled, c.Discord.Token, c.Discord.ShardID, c.Discord.ShardCount = true, "t", 3, 3
		}, "discord.shard_id", "between 0 and shard_count-1"},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.ShardID = true, "t", 1 }, "discord.shard_id", "between 0 and shard_count-1"},
		{func(c *Config) { c.Discord.Enabled, c.Discord.Token, c.Discord.Rate.RequestsPerSecond = true, "t", 0 }, "discord.rate.requests_per_second", "must be greater than 0"},
	}
	for _, tt := range tests {
		c := validConfig()
		tt.mutate(&c)
		wantErr(t, c.Validate(), tt.key, tt.want)
	}
}

// Secrets are never quoted in problems, even a token of the wrong kind.
func TestValidateNeverQuotesSecrets(t *testing.T) {
	c := validConfig()
	c.Slack.BotToken, c.Slack.AppToken = "xoxp-very-secret", "xoxb-also-secret"
	c.Workspace.Repos[0].URL = "https://user:hunter2@github.com/a.git"
	c.LLM.BaseURL = "ftp://user:hunter3@example.com/"
	err := c.Validate()
	if err == nil {
		t.Fatal("got no problems, want four")
	}
	for _, secret := range []string{"very-secret", "also-secret", "hunter2", "hunter3"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("problems quote a secret %q:\n%v", secret, err)
		}
	}
}

// A disabled platform's section is not checked at all.
func TestValidateSkipsDisabledPlatforms(t *testing.T) {
	c := validConfig()
	c.Slack = Slack{Enabled: false, Mode: "rtm", BotToken: "bad", APIURL: "x", Channels: map[string]ChannelRepos{"C": {"nope"}}}
	c.Discord = Discord{Enabled: false, GuildIDs: []string{"x"}, Channels: map[string]ChannelRepos{"C": {"nope"}}}
	if err := c.Validate(); err != nil {
		t.Errorf("got\n%v\nwant no problems from disabled platforms", err)
	}
}

func TestValidateReportsEveryProblemOnePerLine(t *testing.T) {
	c := validConfig()
	c.DataDir = ""
	c.LLM.ContextWindow = 8000
	c.Slack.BotToken = ""
	err := c.Validate()
	want := "data_dir: must not be empty\n" +
		"llm.context_window: must be greater than llm.max_output_tokens (8192)\n" +
		"slack.bot_token: required when slack.enabled is true: the bot token (xoxb-…)"
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Errorf("errors.As(Errors) = %d problems, want 3", len(es))
	}
	var e *Error
	if !errors.As(err, &e) || e.Key != "data_dir" {
		t.Errorf("errors.As(*Error) = %v, want the data_dir problem", e)
	}
}
