package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	discordadapter "github.com/threadsmith/threadsmith/adapters/discord"
	slackadapter "github.com/threadsmith/threadsmith/adapters/slack"
	"github.com/threadsmith/threadsmith/config"
)

// adapterConfigYAML sets every key of the slack and discord sections that an
// adapter reads, each to a value other than its default.
const adapterConfigYAML = `
llm:
  api_key: sk-test
workspace:
  default_repo: app
  repos:
    - name: app
      url: https://github.com/acme/app.git
slack:
  enabled: true
  mode: HTTP
  bot_token: xoxb-bot
  app_token: xapp-app
  signing_secret: shh
  listen: 127.0.0.1:3999
  api_url: http://slack.test/api/
  agent_sessions: true
  streaming: auto
discord:
  enabled: true
  token: discord-token
  application_id: "1234"
  guild_ids: ["111", "222"]
  api_url: http://discord.test
  allowed_users: ["u1"]
  allowed_roles: ["r1", "r2"]
  shard_id: 1
  shard_count: 3
`

// TestAdapterConfigsCarryTheFile: the values of a configuration file reach
// the adapters' Configs, and no field of those is left at its zero value (a
// field added to an adapter without its mapping here fails this test).
func TestAdapterConfigsCarryTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(adapterConfigYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	gotSlack := slackAdapterConfig(cfg.Slack)
	wantSlack := slackadapter.Config{
		Mode:          slackadapter.ModeHTTP,
		BotToken:      "xoxb-bot",
		AppToken:      "xapp-app",
		SigningSecret: "shh",
		Listen:        "127.0.0.1:3999",
		APIURL:        "http://slack.test/api/",
		AgentSessions: true,
		Streaming:     true,
	}
	if !reflect.DeepEqual(gotSlack, wantSlack) {
		t.Errorf("slack adapter config\n got %+v\nwant %+v", gotSlack, wantSlack)
	}
	gotDiscord := discordAdapterConfig(cfg.Discord)
	wantDiscord := discordadapter.Config{
		Token:         "discord-token",
		ApplicationID: "1234",
		GuildIDs:      []string{"111", "222"},
		APIURL:        "http://discord.test",
		AllowedUsers:  []string{"u1"},
		AllowedRoles:  []string{"r1", "r2"},
		ShardID:       1,
		ShardCount:    3,
	}
	if !reflect.DeepEqual(gotDiscord, wantDiscord) {
		t.Errorf("discord adapter config\n got %+v\nwant %+v", gotDiscord, wantDiscord)
	}
	for _, c := range []any{gotSlack, gotDiscord} {
		v := reflect.ValueOf(c)
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Errorf("%s.%s is not set from the file", v.Type(), v.Type().Field(i).Name)
			}
		}
	}
}

// TestAdapterConfigDefaults: a file that leaves the keys out gives the
// adapters config's defaults (socket mode, edits instead of streaming).
func TestAdapterConfigDefaults(t *testing.T) {
	got := slackAdapterConfig(config.Default().Slack)
	if got.Mode != slackadapter.ModeSocket || got.Streaming || got.AgentSessions {
		t.Errorf("slack adapter config of the defaults = %+v, want socket mode, no streaming, no agent sessions", got)
	}
}
