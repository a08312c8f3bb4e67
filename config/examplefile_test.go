package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const exampleFile = "../config.example.yaml"

// exampleEnv are the variables the README asks for; GIT_TOKEN and
// DISCORD_BOT_TOKEN are deliberately unset.
var exampleEnv = map[string]string{
	"OPENAI_API_KEY":  "sk-example",
	"SLACK_BOT_TOKEN": "xoxb-example",
	"SLACK_APP_TOKEN": "xapp-example",
}

func TestExampleFileLoadsAndShowsTheDefaults(t *testing.T) {
	got, err := Load(exampleFile, envMap(exampleEnv))
	if err != nil {
		t.Fatalf("Load(%s): %v", exampleFile, err)
	}

	// The keys the example fills in rather than showing their default.
	if got.LLM.APIKey != "sk-example" || got.Slack.BotToken != "xoxb-example" || got.Slack.AppToken != "xapp-example" {
		t.Errorf("secrets = %q %q %q, want the environment's", got.LLM.APIKey, got.Slack.BotToken, got.Slack.AppToken)
	}
	if got.Workspace.DefaultRepo != "app" || len(got.Workspace.Repos) != 1 || got.Workspace.Repos[0].Name != "app" {
		t.Errorf("workspace = %+v, want default_repo app and one repo app", got.Workspace)
	}
	if r := got.Workspace.Repos[0]; r.DefaultBranch != "main" || r.Token != "" {
		t.Errorf("repo = %+v, want default_branch main and no token (GIT_TOKEN unset, ${GIT_TOKEN:-})", r)
	}
	if len(got.LLM.Models) != 1 || got.LLM.Models[0].Name != "gpt-4.1-mini" {
		t.Errorf("llm.models = %+v, want the one example model", got.LLM.Models)
	}

	want := Default()
	want.DataDir = filepath.Join(filepath.Dir(exampleFile), "data") // beside the file
	want.LLM.APIKey = got.LLM.APIKey
	want.LLM.Models = got.LLM.Models
	want.Workspace.DefaultRepo = got.Workspace.DefaultRepo
	want.Workspace.Repos = got.Workspace.Repos
	if len(got.MCP.Servers) != 1 || !got.MCP.Servers[0].Disabled || got.MCP.Servers[0].Timeout != DefaultMCPTimeout {
		t.Errorf("mcp.servers = %+v, want the one disabled example with the default timeout", got.MCP.Servers)
	}
	want.MCP.Servers = got.MCP.Servers
	if len(got.Schedules) != 1 || !got.Schedules[0].Disabled {
		t.Errorf("schedules = %+v, want the one disabled example", got.Schedules)
	}
	want.Schedules = got.Schedules
	want.Slack.BotToken, want.Slack.AppToken = got.Slack.BotToken, got.Slack.AppToken
	got.unresolved = nil // DISCORD_BOT_TOKEN, under the disabled discord section
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the example differs from Default() where it shows defaults:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestExampleFileNamesItsMissingVariable(t *testing.T) {
	env := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"}
	_, err := Load(exampleFile, envMap(env))
	if err == nil || !strings.HasPrefix(err.Error(), "llm.api_key: environment variable OPENAI_API_KEY is not set (line ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("got %v, want exactly the llm.api_key problem (DISCORD_BOT_TOKEN is under a disabled platform)", err)
	}
}

// Every key of Config appears in the example file (so it cannot drift), on a
// line with a comment, and docs/behaviour.md §5's keys appear in §5's order.
func TestExampleFileDocumentsEveryKey(t *testing.T) {
	src, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	keyLine := make(map[string]int) // "llm.models[].name" -> line of its first occurrence
	var collect func(n *yaml.Node, path string)
	collect = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := joinKey(path, n.Content[i].Value)
				if _, ok := keyLine[k]; !ok {
					keyLine[k] = n.Content[i].Line
				}
				collect(n.Content[i+1], k)
			}
		case yaml.SequenceNode:
			for _, item := range n.Content {
				collect(item, path+"[]")
			}
		}
	}
	collect(doc.Content[0], "")

	var check func(t reflect.Type, path string)
	check = func(typ reflect.Type, path string) {
		for f := range typ.Fields() {
			name := yamlName(f)
			if name == "" {
				continue
			}
			key := joinKey(path, name)
			line, ok := keyLine[key]
			if !ok {
				t.Errorf("config.example.yaml does not show %s", key)
				continue
			}
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Struct:
				check(ft, key)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				check(ft.Elem(), key+"[]")
			default: // a leaf: its line must say what it is
				if !strings.Contains(lines[line-1], " # ") {
					t.Errorf("config.example.yaml:%d: %s has no comment", line, key)
				}
			}
		}
	}
	check(reflect.TypeFor[Config](), "")

	// docs/behaviour.md §5, in its order; the example may add keys in between.
	product := []string{
		"data_dir", "llm", "llm.base_url", "llm.api_key", "llm.model", "llm.context_window",
		"llm.max_output_tokens", "agent", "agent.busy_mode", "agent.retry", "agent.retry.enabled",
		"agent.retry.max_retries", "agent.retry.base_delay", "agent.compaction",
		"agent.compaction.enabled", "agent.compaction.reserve_tokens",
		"agent.compaction.keep_recent_tokens", "workspace", "workspace.default_repo",
		"workspace.branch_prefix", "workspace.repos", "workspace.repos[].name",
		"workspace.repos[].url", "workspace.repos[].default_branch", "workspace.repos[].token",
		"slack", "slack.enabled", "slack.mode", "slack.bot_token", "slack.app_token",
		"slack.api_url", "slack.channels", "slack.allowed_users", "discord", "discord.enabled",
		"discord.token", "discord.application_id", "discord.guild_ids", "discord.api_url",
		"discord.allowed_roles", "discord.allowed_users",
	}
	prev := 0
	for _, k := range product {
		line, ok := keyLine[k]
		switch {
		case !ok:
			t.Errorf("config.example.yaml lacks docs/behaviour.md §5 key %s", k)
		case line < prev:
			t.Errorf("config.example.yaml:%d: %s comes before the key above it in docs/behaviour.md §5 (line %d)", line, k, prev)
		default:
			prev = line
		}
	}
	for _, v := range []string{"${OPENAI_API_KEY}", "${SLACK_BOT_TOKEN}", "${SLACK_APP_TOKEN}", "${DISCORD_BOT_TOKEN}", "${GIT_TOKEN"} {
		if !strings.Contains(string(src), v) {
			t.Errorf("config.example.yaml does not use %s", v)
		}
	}
}
