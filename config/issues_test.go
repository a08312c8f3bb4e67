package config

import "testing"

// An issues section needs a channel of an enabled platform, the webhook
// secret that brings the issues and the token that reads them.
func TestRepoIssuesValidation(t *testing.T) {
	v := validConfig()
	v.Workspace.Repos[0].Issues = &RepoIssues{Label: "threadsmith"}
	err := v.Validate()
	wantErr(t, err, "workspace.repos[0].issues.channel", "must name the channel")
	wantErr(t, err, "workspace.repos[0].issues", "needs webhook_secret")

	v.Workspace.Repos[0].Issues.Channel = "discord:123"
	wantErr(t, v.Validate(), "workspace.repos[0].issues.channel", "not a channel of an enabled platform")

	v.HTTP.Listen = "127.0.0.1:9090"
	v.Workspace.Repos[0].WebhookSecret = "s"
	v.Workspace.Repos[0].Token = "t"
	for _, ch := range []string{"slack:C0123", "C0123"} {
		v.Workspace.Repos[0].Issues.Channel = ch
		if err := v.Validate(); err != nil {
			t.Errorf("channel %q: %v", ch, err)
		}
		if p, id, ok := v.Workspace.Repos[0].Issues.Target(&v); !ok || p != PlatformSlack || id != "C0123" {
			t.Errorf("channel %q: target %q %q %v", ch, p, id, ok)
		}
	}
	// With two platforms the id alone does not say which.
	v.Discord.Enabled, v.Discord.Token, v.Discord.ApplicationID = true, "d", "1"
	if _, _, ok := v.Workspace.Repos[0].Issues.Target(&v); ok {
		t.Error("a bare id with Slack and Discord enabled was taken")
	}
	v.Workspace.Repos[0].Token = ""
	wantErr(t, v.Validate(), "workspace.repos[0].issues", "needs token")
}
