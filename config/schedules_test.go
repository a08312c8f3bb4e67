package config

import (
	"os"
	"path/filepath"
	"testing"
)

// A schedule's problems name its key and line: a bad cron, an unknown time
// zone, repository or platform, a channel the allowlist leaves out, a
// repository the channel's mapping does not offer.
func TestSchedulesAreCheckedWithTheirLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	src := `llm:
  api_key: sk-x
slack:
  bot_token: xoxb-x
  app_token: xapp-x
  allowed_channels: [C1, C2]
  channels: {C2: lib}
workspace:
  default_repo: app
  repos:
    - {name: app, url: /srv/app.git}
    - {name: lib, url: /srv/lib.git}
schedules:
  - name: nightly
    cron: "0 9 * *"
    channel: C1
    prompt: check
  - name: nightly
    cron: "0 9 * * *"
    timezone: Mars/Olympus
    channel: discord:123
    prompt: check
  - name: weekly
    cron: "@every 1h"
    channel: C9
    repo: nope
    prompt: check
    thread: sometimes
  - name: mapped
    cron: "@daily"
    channel: slack:C2
    repo: app
    prompt: " "
`
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, envMap(nil))
	wantErr(t, err, "schedules[0].cron", `"0 9 * *"`, "expected exactly 5 fields", "(line 15)")
	wantErr(t, err, "schedules[1].name", `"nightly" is used by two schedules`, "(line 18)")
	wantErr(t, err, "schedules[1].timezone", `unknown time zone "Mars/Olympus"`, "(line 20)")
	wantErr(t, err, "schedules[1].channel", "discord is not enabled", "(line 21)")
	wantErr(t, err, "schedules[2].cron", "@every is not a calendar schedule", "(line 24)")
	wantErr(t, err, "schedules[2].repo", `unknown repository "nope"`, "(line 26)")
	wantErr(t, err, "schedules[2].channel", `"C9" is not in slack.allowed_channels`, "(line 25)")
	wantErr(t, err, "schedules[2].thread", `"sometimes"`, "(line 28)")
	wantErr(t, err, "schedules[3].repo", `"app" is not one of the repositories slack.channels maps C2 to (lib)`, "(line 32)")
	wantErr(t, err, "schedules[3].prompt", "must not be empty", "(line 33)")
	noErrUnder(t, err, "schedules[0].channel")
}

// A channel without its platform is the only enabled platform's; with both
// enabled, the platform must be named.
func TestScheduleChannelsPlatform(t *testing.T) {
	t.Parallel()
	c := validConfig()
	c.Schedules = []Schedule{{Name: "a", Cron: "0 9 * * *", Channel: "C1", Prompt: "x"}}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if p, ch := c.PlatformChannel(c.Schedules[0]); p != "slack" || ch != "C1" {
		t.Errorf("PlatformChannel = %s %s, want slack C1", p, ch)
	}
	c.Discord.Enabled, c.Discord.Token = true, "x"
	wantErr(t, c.Validate(), "schedules[0].channel", "name its platform")
	c.Schedules[0].Channel = "discord:123"
	noErrUnder(t, c.Validate(), "schedules")
	if p, ch := c.PlatformChannel(c.Schedules[0]); p != "discord" || ch != "123" {
		t.Errorf("PlatformChannel = %s %s, want discord 123", p, ch)
	}
}
