package config

import (
	"bytes"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func secretConfig() Config {
	c := validConfig()
	c.LLM.APIKey = "sk-SECRET1"
	c.LLM.BaseURL = "https://proxyuser:SECRET2@llm.example.com/v1"
	c.Agent.BashEnv = map[string]string{"NPM_TOKEN": "SECRET3", "EMPTY": ""}
	c.Workspace.Repos[0].Token = "SECRET4"
	c.Workspace.Repos[1].URL = "https://SECRET5@example.com/lib.git"
	c.Slack.BotToken = "xoxb-SECRET6"
	c.Slack.AppToken = "xapp-SECRET7"
	c.Slack.SigningSecret = "SECRET8"
	c.Slack.APIURL = "https://u:SECRET9@slack-proxy.example.com/api/"
	c.Discord.Token = "SECRET10"
	c.Discord.APIURL = "https://u:SECRET11@discord-proxy.example.com/"
	c.LLM.Models = []Model{{Name: "small", BaseURL: "https://llm-proxy.example.com/v1?key=SECRET12"}}
	return c
}

func TestRedactedHidesEverySecret(t *testing.T) {
	c := secretConfig()
	orig := fmt.Sprintf("%+v", c)
	r := c.Redacted()
	out := fmt.Sprintf("%+v", r)
	if strings.Contains(out, "SECRET") {
		t.Errorf("Redacted() still shows a secret:\n%s", out)
	}
	if r.LLM.APIKey != "***" || r.Slack.BotToken != "***" || r.Workspace.Repos[0].Token != "***" || r.Agent.BashEnv["NPM_TOKEN"] != "***" {
		t.Errorf("got %q %q %q %q, want *** for each", r.LLM.APIKey, r.Slack.BotToken, r.Workspace.Repos[0].Token, r.Agent.BashEnv["NPM_TOKEN"])
	}
	if r.Discord.APIURL != "https://%2A%2A%2A@discord-proxy.example.com/" && r.Discord.APIURL != "https://***@discord-proxy.example.com/" {
		t.Errorf("discord.api_url = %q, want the host kept and the user information hidden", r.Discord.APIURL)
	}
	// Unset secrets stay visibly unset; non-secrets are untouched.
	if r.Agent.BashEnv["EMPTY"] != "" || r.Workspace.Repos[1].Token != "" || r.LLM.Model != "gpt-4.1" || r.Workspace.Repos[0].URL != c.Workspace.Repos[0].URL {
		t.Errorf("Redacted changed non-secrets: %+v", r)
	}
	// The original is not modified.
	if after := fmt.Sprintf("%+v", c); after != orig {
		t.Errorf("Redacted modified its receiver:\nbefore %s\nafter  %s", orig, after)
	}
}

func TestLoggingAConfigRedactsIt(t *testing.T) {
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("effective configuration", "config", secretConfig())
	if strings.Contains(buf.String(), "SECRET") {
		t.Errorf("logged config shows a secret:\n%s", buf.String())
	}
	if !strings.Contains(buf.String(), "gpt-4.1") || !strings.Contains(buf.String(), "***") {
		t.Errorf("logged config = %s, want the model and *** placeholders", buf.String())
	}
}

func TestPlatforms(t *testing.T) {
	for _, tt := range []struct {
		slack, discord bool
		want           []string
	}{
		{true, false, []string{"slack"}},
		{false, true, []string{"discord"}},
		{true, true, []string{"slack", "discord"}},
		{false, false, nil},
	} {
		c := Default()
		c.Slack.Enabled, c.Discord.Enabled = tt.slack, tt.discord
		if got := c.Platforms(); !slices.Equal(got, tt.want) {
			t.Errorf("slack %v discord %v: Platforms() = %v, want %v", tt.slack, tt.discord, got, tt.want)
		}
	}
}

func TestAccessors(t *testing.T) {
	c := validConfig()
	c.LLM.Price = Price{Input: 2, Output: 8}
	c.LLM.Models = []Model{{Name: "small", ContextWindow: 32000, MaxOutputTokens: 4000}}

	if got := c.LLM.ModelNames(); !slices.Equal(got, []string{"gpt-4.1", "small"}) {
		t.Errorf("ModelNames() = %v, want [gpt-4.1 small]", got)
	}
	if m, ok := c.LLM.Lookup("gpt-4.1"); !ok || m.ContextWindow != 128000 || m.Price.Output != 8 {
		t.Errorf("Lookup(main) = %+v, %v; want the main model with its window and price", m, ok)
	}
	if m, ok := c.LLM.Lookup("small"); !ok || m.ContextWindow != 32000 || !m.Price.IsZero() {
		t.Errorf("Lookup(small) = %+v, %v; want small with no price", m, ok)
	}
	if _, ok := c.LLM.Lookup("nope"); ok {
		t.Error("Lookup(nope) found a model, want none")
	}
	if r, ok := c.Workspace.Repo("lib"); !ok || r.DefaultBranch != "trunk" {
		t.Errorf("Repo(lib) = %+v, %v; want lib on trunk", r, ok)
	}
	if got := c.Workspace.RepoNames(); !reflect.DeepEqual(got, []string{"app", "lib"}) {
		t.Errorf("RepoNames() = %v, want [app lib]", got)
	}

	for _, tt := range []struct{ api, slack, discord string }{
		{"", DefaultSlackAPIURL, DefaultDiscordAPIURL},
		{"http://127.0.0.1:9/", "http://127.0.0.1:9/", "http://127.0.0.1:9/"},
	} {
		s, d := Slack{APIURL: tt.api}, Discord{APIURL: tt.api}
		if s.BaseURL() != tt.slack || d.BaseURL() != tt.discord {
			t.Errorf("api_url %q: BaseURL() = %q, %q; want %q, %q", tt.api, s.BaseURL(), d.BaseURL(), tt.slack, tt.discord)
		}
	}
	if got := (Discord{APIURL: "http://127.0.0.1:9"}).BaseURL(); got != "http://127.0.0.1:9/" {
		t.Errorf("Discord.BaseURL() without a slash = %q, want one added", got)
	}

	for _, tt := range []struct {
		f        LogFormat
		terminal bool
		want     bool
	}{
		{LogAuto, true, false}, {LogAuto, false, true}, {LogJSON, true, true}, {LogText, false, false},
	} {
		if got := tt.f.JSON(tt.terminal); got != tt.want {
			t.Errorf("%s.JSON(terminal=%v) = %v, want %v", tt.f, tt.terminal, got, tt.want)
		}
	}
	if LogDebug.Slog() != slog.LevelDebug || LogWarn.Slog() != slog.LevelWarn || LogError.Slog() != slog.LevelError || LogInfo.Slog() != slog.LevelInfo {
		t.Error("LogLevel.Slog() maps a level wrongly")
	}
}

// A URL's query is hidden however it is written: a bare token (?TOKEN)
// has no name=value to keep the name of, and a URL that does not parse
// (here its port) still holds its query.
func TestRedactedHidesQueriesItCannotName(t *testing.T) {
	c := validConfig()
	c.LLM.Models = []Model{
		{Name: "bare", BaseURL: "https://hooks.example.com/v1?SECRET13"},
		{Name: "unparsable", BaseURL: "https://llm-proxy.example.com:port/v1?key=SECRET14"},
		{Name: "semicolon", BaseURL: "https://llm-proxy.example.com/v1?v=2;SECRET15"},
		// A bare token before a ';' pair: the name of "SECRET18;v=2" is not "SECRET18;v".
		{Name: "semicolon first", BaseURL: "https://llm-proxy.example.com/v1?SECRET18;v=2&w=3"},
	}
	r := c.Redacted()
	if out := fmt.Sprintf("%+v", r.LLM.Models); strings.Contains(out, "SECRET") {
		t.Errorf("Redacted() still shows a secret: %s", out)
	}
	if got := r.LLM.Models[0].BaseURL; got != "https://hooks.example.com/v1?***" {
		t.Errorf("bare token: got %q, want the host and path kept", got)
	}
	if got := r.LLM.Models[3].BaseURL; got != "https://llm-proxy.example.com/v1?***;v=***&w=***" {
		t.Errorf("';' pairs: got %q, want each value hidden and the names kept", got)
	}
	k := validConfig()
	k.LLM.BaseURL = "https://llm-proxy.example.com/v1?key=SECRET16&transport=stream"
	if got := k.Redacted().LLM.BaseURL; got != "https://llm-proxy.example.com/v1?key=***&transport=***" {
		t.Errorf("got %q, want the names kept in their order", got)
	}
}
