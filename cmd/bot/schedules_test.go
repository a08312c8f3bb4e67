package main

import (
	"testing"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// The config's check (-check, start) and the schedule runner read a cron
// expression each with its own parser (config imports nothing of the
// project's): what one refuses, the other refuses, so a schedule -check
// passes never fails at start.
func TestScheduleCronIsReadAlikeByCheckAndRunner(t *testing.T) {
	t.Parallel()
	base := e2eConfig(t, llmfake.New(t), gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README.md": "# app\n"}}))
	base.Slack.Enabled, base.Slack.BotToken, base.Slack.AppToken = true, "xoxb-test", "xapp-test"
	for _, expr := range []string{"0 9 * * 1-5", "*/15 * * * *", "0 9 * * MON-FRI", "@daily", "@weekly",
		"@every 1h", "TZ=UTC 0 9 * * *", "CRON_TZ=UTC 0 9 * * *", "", "0 9 * *", "61 * * * *", "0 9 * * 8", "0 0 30 2 *", "* * * * * *"} {
		cfg := base
		cfg.Schedules = []config.Schedule{{Name: "nightly", Cron: expr, Timezone: "Europe/Paris", Channel: "C0OPS0001", Prompt: "go"}}
		checked := cfg.Validate() == nil
		_, err := schedules(&cfg, false)
		if ran := err == nil; checked != ran {
			t.Errorf("cron %q: the check says ok=%v, the runner ok=%v (%v)", expr, checked, ran, err)
		}
	}
}
