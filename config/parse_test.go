package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseEmptyInputGivesDefaults(t *testing.T) {
	for _, src := range []string{"", "---\n", "# only a comment\n", "~\n"} {
		c := mustParse(t, src, nil)
		if !reflect.DeepEqual(c, Default()) {
			t.Errorf("Parse(%q):\ngot  %+v\nwant %+v", src, c, Default())
		}
	}
}

func TestParseAbsentKeysKeepDefaults(t *testing.T) {
	c := mustParse(t, `
llm:
  model: gpt-5
agent:
  retry:
    max_retries: 5
slack:
discord:
  rate:
    edits_per_5s: 4
`, nil)
	want := Default()
	want.LLM.Model = "gpt-5"
	want.Agent.Retry.MaxRetries = 5
	want.Discord.Rate.EditsPer5s = 4
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got  %+v\nwant %+v", c, want)
	}
}

func TestParseFillsListItemDefaults(t *testing.T) {
	c := mustParse(t, `
llm:
  context_window: 200000
  max_output_tokens: 16000
  models:
    - name: small
    - {name: tiny, context_window: 32000, max_output_tokens: 4000}
workspace:
  repos:
    - {name: app, url: /srv/app}
    - {name: lib, url: /srv/lib, default_branch: trunk}
slack:
  allowed_users: []
  channels: {}
`, nil)
	if got := c.Workspace.Repos[0].DefaultBranch; got != "main" {
		t.Errorf("repos[0].default_branch = %q, want main", got)
	}
	if got := c.Workspace.Repos[1].DefaultBranch; got != "trunk" {
		t.Errorf("repos[1].default_branch = %q, want trunk", got)
	}
	if got := c.LLM.Models[0]; got.ContextWindow != 200000 || got.MaxOutputTokens != 16000 {
		t.Errorf("models[0] = %+v, want limits inherited from llm (200000, 16000)", got)
	}
	if got := c.LLM.Models[1]; got.ContextWindow != 32000 || got.MaxOutputTokens != 4000 {
		t.Errorf("models[1] = %+v, want its own limits (32000, 4000)", got)
	}
	if c.Slack.AllowedUsers != nil || c.Slack.Channels != nil {
		t.Errorf("empty list/map = %#v, %#v; want nil (canonical form)", c.Slack.AllowedUsers, c.Slack.Channels)
	}
}

func TestParseDurations(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"250ms", 250 * time.Millisecond},
		{"168h", 168 * time.Hour},
	} {
		c := mustParse(t, "agent:\n  bash_timeout: "+tt.in+"\nrun_timeout: "+tt.in+"\n", nil)
		if c.Agent.BashTimeout != tt.want || c.RunTimeout != tt.want {
			t.Errorf("%s: got bash_timeout %v, run_timeout %v; want %v", tt.in, c.Agent.BashTimeout, c.RunTimeout, tt.want)
		}
	}
	// notify_after: 0s turns the mention off; left out, it is a minute.
	if c := mustParse(t, "agent:\n  notify_after: 0s\n", nil); c.Agent.NotifyAfter != 0 {
		t.Errorf("notify_after: 0s gives %v, want 0", c.Agent.NotifyAfter)
	}
	if c := mustParse(t, "agent:\n  bash_timeout: 1m\n", nil); c.Agent.NotifyAfter != time.Minute {
		t.Errorf("notify_after left out gives %v, want 1m", c.Agent.NotifyAfter)
	}
	for _, bad := range []string{"10", "ten minutes", "5 m", "true"} {
		_, err := parseString("agent:\n  retry:\n    base_delay: "+bad+"\n", nil)
		wantErr(t, err, "agent.retry.base_delay", "must be a duration such as 30s", "line 3", bad)
	}
}

func TestParseExpandsValuesEverywhere(t *testing.T) {
	env := map[string]string{
		"KEY":      "sk-a:b #c",
		"RUNS":     "3",
		"SLACK_ON": "false",
		"ADMIN":    "U1",
		"REPO":     "app",
		"VAL":      "v1",
		"PREFIX":   "x/",
		"TIMEOUT":  "45s",
		"RATE":     "0.5",
	}
	c := mustParse(t, `
max_concurrent_runs: ${RUNS}
llm:
  api_key: ${KEY}
  base_url: ${BASE:-http://127.0.0.1:8080/v1}
agent:
  bash_timeout: ${TIMEOUT}
  bash_env:
    ${NOT_EXPANDED}: ${VAL}
    PLAIN: "pre-${VAL}-post"
  system_prompt: "use $${HOME}, not ${VAL}"
workspace:
  branch_prefix: "${PREFIX}"
slack:
  enabled: ${SLACK_ON}
  allowed_users:
    - ${ADMIN}
    - U2
  allowed_channels: ["${ADMIN}"] # inside [ ] and { }, a reference must be quoted
  channels: {C1: "${REPO}"}
  rate:
    post_per_second: ${RATE}
`, env)
	checks := []struct {
		name      string
		got, want any
	}{
		{"max_concurrent_runs (int from a plain ${})", c.MaxConcurrentRuns, 3},
		{"llm.api_key (':' and '#' survive)", c.LLM.APIKey, "sk-a:b #c"},
		{"llm.base_url (default)", c.LLM.BaseURL, "http://127.0.0.1:8080/v1"},
		{"agent.bash_timeout (duration)", c.Agent.BashTimeout, 45 * time.Second},
		{"bash_env key not expanded", c.Agent.BashEnv["${NOT_EXPANDED}"], "v1"},
		{"bash_env value inside text", c.Agent.BashEnv["PLAIN"], "pre-v1-post"},
		{"system_prompt escape", c.Agent.SystemPrompt, "use ${HOME}, not v1"},
		{"branch_prefix (quoted)", c.Workspace.BranchPrefix, "x/"},
		{"slack.enabled (bool)", c.Slack.Enabled, false},
		{"slack.allowed_users (list)", c.Slack.AllowedUsers, []string{"U1", "U2"}},
		{"slack.allowed_channels (flow list)", c.Slack.AllowedChannels, []string{"U1"}},
		{"slack.channels (map)", c.Slack.Channels, map[string]ChannelRepos{"C1": {"app"}}},
		{"slack.rate.post_per_second (float)", c.Slack.Rate.PostPerSecond, 0.5},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s: got %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
}

// An expanded value is text, never YAML: whatever a secret contains, it stays
// one string in its own key.
func TestParseExpandedValueIsNeverYAML(t *testing.T) {
	for _, secret := range []string{
		"x\nslack:\n  enabled: false",
		"{enabled: false}",
		"[a, b]",
		"null",
		"~",
		"007",
		"true",
		"- item",
		"*alias",
		"&anchor x",
	} {
		c := mustParse(t, "llm:\n  api_key: ${SECRET}\nslack:\n  bot_token: ${SECRET}\n", map[string]string{"SECRET": secret})
		if c.LLM.APIKey != secret || c.Slack.BotToken != secret {
			t.Errorf("secret %q: got api_key %q, bot_token %q; want the secret verbatim", secret, c.LLM.APIKey, c.Slack.BotToken)
		}
		if !c.Slack.Enabled {
			t.Errorf("secret %q changed slack.enabled", secret)
		}
	}
}

// A quoted reference is a string, so it cannot fill a number, and the error
// must not echo a value that came from the environment.
func TestParseTypeErrorNeverEchoesEnvValue(t *testing.T) {
	_, err := parseString("max_concurrent_runs: \"${RUNS}\"\n", map[string]string{"RUNS": "hunter2"})
	e := wantErr(t, err, "max_concurrent_runs", "must be a whole number", "line 1")
	if strings.Contains(e.Reason, "hunter2") {
		t.Errorf("reason %q echoes the environment value", e.Reason)
	}
	_, err = parseString("max_concurrent_runs: ${RUNS}\n", map[string]string{"RUNS": "hunter2"})
	if e := wantErr(t, err, "max_concurrent_runs", "whole number"); strings.Contains(e.Reason, "hunter2") {
		t.Errorf("reason %q echoes the environment value", e.Reason)
	}
}

func TestParseMalformedReferenceNamesKey(t *testing.T) {
	_, err := parseString("workspace:\n  repos:\n    - name: app\n      url: /srv/${REPO\n", nil)
	wantErr(t, err, "workspace.repos[0].url", `unterminated "${"`, `"$${"`, "line 4")
}

func TestParseUnsetVariables(t *testing.T) {
	const base = "llm:\n  api_key: sk-x\nslack:\n  bot_token: xoxb-1\n  app_token: xapp-1\n"
	tests := []struct {
		name    string
		src     string
		key     string // "" = no problem expected
		varName string
		absent  string // key prefix that must have no problem
	}{
		{
			name: "main key", key: "llm.api_key", varName: "OPENAI_API_KEY",
			src: "llm:\n  api_key: ${OPENAI_API_KEY}\nslack:\n  enabled: false\n",
		},
		{
			name: "inside a list item", key: "workspace.repos[0].token", varName: "GIT_TOKEN",
			src: base + "workspace:\n  default_repo: app\n  repos:\n    - {name: app, url: /srv/app, token: \"${GIT_TOKEN}\"}\n",
		},
		{
			name: "inside a map", key: "agent.bash_env.NPM_TOKEN", varName: "NPM_TOKEN",
			src: base + "agent:\n  bash_env: {NPM_TOKEN: \"${NPM_TOKEN}\"}\n",
		},
		{
			name: "inside a list of strings", key: "slack.allowed_users[1]", varName: "ADMIN",
			src: base[:len(base)-1] + "\n  allowed_users: [U1, \"${ADMIN}\"]\n",
		},
		{
			name: "enabled platform", key: "discord.token", varName: "DISCORD_BOT_TOKEN",
			src: base + "discord:\n  enabled: true\n  token: ${DISCORD_BOT_TOKEN}\n",
		},
		{
			name: "disabled discord", absent: "discord",
			src: base + "discord:\n  enabled: false\n  token: ${DISCORD_BOT_TOKEN}\n  api_url: ${DISCORD_URL}\n",
		},
		{
			name: "disabled slack", absent: "slack",
			src: "llm:\n  api_key: sk-x\nslack:\n  enabled: false\n  bot_token: ${SLACK_BOT_TOKEN}\n  app_token: ${SLACK_APP_TOKEN}\n",
		},
		{
			name: "default makes it optional", absent: "workspace",
			src: base + "workspace:\n  default_repo: app\n  repos:\n    - {name: app, url: /srv/app, token: \"${GIT_TOKEN:-}\"}\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseString(tt.src, nil)
			if err != nil {
				t.Fatalf("Parse: unexpected error (unset variables are Validate's business): %v", err)
			}
			err = c.Validate()
			if tt.key == "" {
				noErrUnder(t, err, tt.absent)
				if err != nil && strings.Contains(err.Error(), "is not set") {
					t.Errorf("got %v, want no unset-variable problem", err)
				}
				return
			}
			e := wantErr(t, err, tt.key)
			if want := "environment variable " + tt.varName + " is not set"; e.Reason != want {
				t.Errorf("%s: got reason %q, want %q (and only that: one problem per key)", tt.key, e.Reason, want)
			}
		})
	}
}

// An unset variable leaves the key at its default rather than zeroing it, so
// no second, misleading problem appears.
func TestParseUnsetVariableKeepsDefault(t *testing.T) {
	c := mustParse(t, "max_concurrent_runs: ${RUNS}\nslack:\n  rate:\n    post_burst: ${BURST}\n", nil)
	if c.MaxConcurrentRuns != 8 || c.Slack.Rate.PostBurst != 5 {
		t.Errorf("got max_concurrent_runs %d, post_burst %d; want the defaults 8 and 5", c.MaxConcurrentRuns, c.Slack.Rate.PostBurst)
	}
	err := c.Validate()
	wantErr(t, err, "max_concurrent_runs", "environment variable RUNS is not set")
	wantErr(t, err, "slack.rate.post_burst", "environment variable BURST is not set")
}

func TestParseUnknownKeys(t *testing.T) {
	tests := []struct {
		src, key string
		want     []string
	}{
		{"foo: 1\n", "foo", []string{"unknown key (line 1)"}},
		{"slack:\n  bot_tokn: x\n", "slack.bot_tokn", []string{"unknown key (line 2)", `did you mean "bot_token"?`}},
		{"slack:\n  botToken: x\n", "slack.botToken", []string{`did you mean "bot_token"?`}},
		{"workspace:\n  repos:\n    - name: a\n      branch: main\n", "workspace.repos[0].branch", []string{"unknown key (line 4)"}},
		{"llm:\n  models:\n    - {name: m, pricing: {}}\n", "llm.models[0].pricing", []string{`did you mean "price"?`}},
		{"agent:\n  retry:\n    max_retry: 2\n", "agent.retry.max_retry", []string{`did you mean "max_retries"?`}},
	}
	for _, tt := range tests {
		_, err := parseString(tt.src, nil)
		wantErr(t, err, tt.key, tt.want...)
	}

	_, err := parseString("foo: 1\nllm:\n  modle: x\nbar: 2\n", nil)
	if got := len(AsErrors(err)); got != 3 {
		t.Errorf("got %d problems (%v), want all 3 unknown keys reported", got, err)
	}
}

func TestParseTypeErrorsNameTheKey(t *testing.T) {
	tests := []struct {
		src, key string
		want     []string
	}{
		{"max_concurrent_runs: many\n", "max_concurrent_runs", []string{`must be a whole number, not "many" (line 1)`}},
		{"slack:\n  enabled: maybe\n", "slack.enabled", []string{"must be true or false"}},
		{"slack: [a]\n", "slack", []string{"must be a mapping of keys, not a list"}},
		{"slack:\n  allowed_users: U1\n", "slack.allowed_users", []string{"must be a list, not a single value"}},
		{"slack:\n  channels: [C1]\n", "slack.channels", []string{"must be a mapping, not a list"}},
		{"llm:\n  model: [a, b]\n", "llm.model", []string{"must be a single value, not a list"}},
		{"llm:\n  price:\n    input: cheap\n", "llm.price.input", []string{"must be a number"}},
		{"workspace:\n  max_download_bytes: 20MiB\n", "workspace.max_download_bytes", []string{"whole number"}},
	}
	for _, tt := range tests {
		_, err := parseString(tt.src, nil)
		wantErr(t, err, tt.key, tt.want...)
	}
}

func TestParseDuplicateKey(t *testing.T) {
	_, err := parseString("data_dir: a\nllm:\n  model: x\ndata_dir: b\n", nil)
	wantErr(t, err, "data_dir", "defined twice (lines 1 and 4)")
}

func TestParseNormalisesEnumerations(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want BusyMode
	}{
		{"followUp", BusyFollowUp}, {"followup", BusyFollowUp}, {"follow_up", BusyFollowUp},
		{"FOLLOW_UP", BusyFollowUp}, {"Follow-Up", BusyFollowUp}, {"steer", BusySteer}, {"Steer", BusySteer},
	} {
		c := mustParse(t, "agent:\n  busy_mode: "+tt.in+"\n", nil)
		if c.Agent.BusyMode != tt.want {
			t.Errorf("busy_mode %q: got %q, want %q", tt.in, c.Agent.BusyMode, tt.want)
		}
	}
	c := mustParse(t, "agent:\n  steer_mode: ALL\n  follow_up_mode: One_At_A_Time\nlog:\n  level: WARNING\n  format: JSON\nslack:\n  mode: HTTP\n", nil)
	if c.Agent.SteerMode != AllAtOnce || c.Agent.FollowUpMode != OneAtATime || c.Log.Level != LogWarn ||
		c.Log.Format != LogJSON || c.Slack.Mode != SlackHTTP {
		t.Errorf("got %q %q %q %q %q; want all %q %q %q %q %q", c.Agent.SteerMode, c.Agent.FollowUpMode,
			c.Log.Level, c.Log.Format, c.Slack.Mode, AllAtOnce, OneAtATime, LogWarn, LogJSON, SlackHTTP)
	}
	// An unknown spelling is kept for Validate to name.
	c = mustParse(t, "agent:\n  busy_mode: eager\n", nil)
	wantErr(t, c.Validate(), "agent.busy_mode", `must be followUp or steer (got "eager")`)
}

// Anchors are expanded once: a value reached again through an alias or a
// merge must not be expanded a second time.
func TestParseAnchorsAndMerge(t *testing.T) {
	c := mustParse(t, `
workspace:
  repos:
    - &base {name: app, url: "${URL}", default_branch: develop}
    - <<: *base
      name: lib
    - *base
`, map[string]string{"URL": "/srv/a$${b}"})
	if len(c.Workspace.Repos) != 3 {
		t.Fatalf("got %d repos, want 3", len(c.Workspace.Repos))
	}
	for i, r := range c.Workspace.Repos {
		if r.URL != "/srv/a$${b}" || r.DefaultBranch != "develop" {
			t.Errorf("repos[%d] = %+v, want url /srv/a$${b} (expanded once) and default_branch develop", i, r)
		}
	}
	if c.Workspace.Repos[1].Name != "lib" {
		t.Errorf("repos[1].name = %q, want lib (merge key overridden)", c.Workspace.Repos[1].Name)
	}

	_, err := parseString("workspace:\n  repos:\n    - &r {name: a, url: /x}\n    - <<: *r\n      nme: b\n", nil)
	wantErr(t, err, "workspace.repos[1].nme", "unknown key")
}

func TestParseSyntaxErrorNamesLine(t *testing.T) {
	tests := []struct{ src, want string }{
		{"data_dir: ./data\nllm:\n  model: a\n bad: b\n", "line 3: invalid YAML: "},
		{"data_dir: ./data\nslack:\n  allowed_users: [a\n", "line 2: invalid YAML: "},
		{"a: b: c\n", "line 1: invalid YAML: mapping values are not allowed"},
	}
	for _, tt := range tests {
		_, err := parseString(tt.src, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error = %v, want it to start with %q", tt.src, err, tt.want)
		}
	}
}

func TestParseRejectsOtherShapes(t *testing.T) {
	_, err := parseString("data_dir: a\n---\ndata_dir: b\n", nil)
	if err == nil || !strings.Contains(err.Error(), "line 2: only one YAML document") {
		t.Errorf("two documents: got %v, want %q", err, "line 2: only one YAML document is allowed")
	}
	_, err = parseString("- a\n- b\n", nil)
	if err == nil || !strings.Contains(err.Error(), "must be a mapping of keys") {
		t.Errorf("list at top: got %v, want a mapping-of-keys error", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := envMap(map[string]string{"OPENAI_API_KEY": "sk-x"})

	good := write("good.yaml", "llm:\n  api_key: ${OPENAI_API_KEY}\nslack:\n  enabled: false\n")
	c, err := Load(good, env)
	if err != nil {
		t.Fatalf("Load(valid file): %v", err)
	}
	if c.LLM.APIKey != "sk-x" {
		t.Errorf("api_key = %q, want sk-x", c.LLM.APIKey)
	}

	// Load validates.
	invalid := write("invalid.yaml", "llm:\n  api_key: sk-x\n  context_window: 4096\nslack:\n  enabled: false\n")
	_, err = Load(invalid, env)
	wantErr(t, err, "llm.context_window", "must be greater than llm.max_output_tokens (8192)")

	// A syntax error names the file and the line.
	broken := write("broken.yaml", "data_dir: ./data\nllm:\n  model: a\n bad: b\n")
	_, err = Load(broken, env)
	if want := broken + ":3: invalid YAML"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want an error starting with %q", err, want)
	}

	_, err = Load(filepath.Join(dir, "missing.yaml"), env)
	var es Errors
	if !errors.As(err, &es) || !strings.Contains(err.Error(), "cannot read the configuration file") {
		t.Errorf("missing file: got %v, want Errors saying it cannot be read", err)
	}
}

// A channel maps to one repository or to a list of them; allow_dms defaults
// to "only without a channel allowlist".
func TestParseChannelReposAndDMs(t *testing.T) {
	c, err := parseString(`
slack:
  channels:
    C1: app
    C2: [lib, app]
    C3: ["${REPO}", "*"]
  allowed_channels: [C1]
discord:
  channels: {"1": lib}
  allow_dms: false
`, map[string]string{"REPO": "app"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ChannelRepos{"C1": {"app"}, "C2": {"lib", "app"}, "C3": {"app", AnyRepo}}
	if !reflect.DeepEqual(c.Slack.Channels, want) {
		t.Errorf("slack.channels = %#v, want %#v", c.Slack.Channels, want)
	}
	if !reflect.DeepEqual(c.Discord.Channels, map[string]ChannelRepos{"1": {"lib"}}) {
		t.Errorf("discord.channels = %#v", c.Discord.Channels)
	}
	if c.Slack.DMsAllowed() {
		t.Error("slack: DMs allowed by default although allowed_channels is set")
	}
	if c.Discord.AllowDMs == nil || *c.Discord.AllowDMs {
		t.Errorf("discord.allow_dms = %v, want false", c.Discord.AllowDMs)
	}
	yes := true
	for _, s := range []Slack{{}, {AllowedChannels: []string{"C1"}, AllowDMs: &yes}} {
		if !s.DMsAllowed() {
			t.Errorf("%+v: DMs refused, want allowed", s)
		}
	}
	_, err = parseString("slack:\n  channels: {C1: {repo: app}}\n", nil)
	wantErr(t, err, "slack.channels.C1", "must be a list")
}
