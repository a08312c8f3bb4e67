package config

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mcp.servers as an operator writes them: secrets come from the bot's
// environment through ${VAR} in env and headers, the call timeout defaults
// to 2m, and a repository's own servers stay off unless allowed.
func TestParseMCPServers(t *testing.T) {
	c := mustParse(t, `
mcp:
  servers:
    - name: tracker
      command: tracker-mcp
      args: [--read-only]
      env: {TRACKER_TOKEN: "${TRACKER_TOKEN}", MODE: plain}
      network: true
      tools: [search, get]
      repos: [app]
      channels: [C1]
    - name: docs
      url: https://mcp.example.com/mcp
      headers: {Authorization: "Bearer ${DOCS_TOKEN}"}
      timeout: 30s
`, map[string]string{"TRACKER_TOKEN": "trk-secret", "DOCS_TOKEN": "docs-secret"})
	if c.MCP.RepoServers {
		t.Error("mcp.repo_servers is on by default; repository content is untrusted")
	}
	want := []MCPServer{
		{Name: "tracker", Command: "tracker-mcp", Args: []string{"--read-only"}, Env: map[string]string{"TRACKER_TOKEN": "trk-secret", "MODE": "plain"},
			Network: true, Tools: []string{"search", "get"}, Repos: []string{"app"}, Channels: []string{"C1"}, Timeout: DefaultMCPTimeout},
		{Name: "docs", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer docs-secret"}, Timeout: 30 * time.Second},
	}
	if !reflect.DeepEqual(c.MCP.Servers, want) {
		t.Errorf("mcp.servers = %+v\nwant %+v", c.MCP.Servers, want)
	}
	if c := mustParse(t, "mcp: {repo_servers: true}\n", nil); !c.MCP.RepoServers {
		t.Error("mcp.repo_servers: true was not read")
	}
}

func TestValidateMCPServers(t *testing.T) {
	stdio := MCPServer{Name: "tracker", Command: "tracker-mcp", Timeout: DefaultMCPTimeout}
	web := MCPServer{Name: "docs", URL: "https://mcp.example.com/mcp", Timeout: DefaultMCPTimeout}
	with := func(f func(*MCPServer), base MCPServer) []MCPServer { f(&base); return []MCPServer{base} }
	c := validConfig()
	c.MCP.Servers = []MCPServer{stdio, web}
	if err := c.Validate(); err != nil {
		t.Fatalf("a stdio and a url server: %v", err)
	}
	for _, tt := range []struct {
		servers []MCPServer
		key     string
		want    string
	}{
		{with(func(s *MCPServer) { s.Name = "" }, stdio), "mcp.servers[0].name", "1-24 letters, digits or '-'"},
		{with(func(s *MCPServer) { s.Name = "a__b" }, stdio), "mcp.servers[a__b].name", "1-24 letters, digits or '-'"},
		{with(func(s *MCPServer) { s.Name = strings.Repeat("n", 25) }, stdio), "mcp.servers[" + strings.Repeat("n", 25) + "].name", "1-24"},
		{[]MCPServer{stdio, stdio}, "mcp.servers[tracker].name", "is used twice"},
		{with(func(s *MCPServer) { s.Command = "" }, stdio), "mcp.servers[tracker]", "needs a command (stdio server) or a url"},
		{with(func(s *MCPServer) { s.URL = web.URL }, stdio), "mcp.servers[tracker]", "both a command and a url"},
		{with(func(s *MCPServer) { s.URL = "mcp.example.com/mcp" }, web), "mcp.servers[docs].url", "http(s) URL"},
		{with(func(s *MCPServer) { s.Env = map[string]string{"A": "b"} }, web), "mcp.servers[docs]", "args, env and network are for stdio servers"},
		{with(func(s *MCPServer) { s.Network = true }, web), "mcp.servers[docs]", "args, env and network are for stdio servers"},
		{with(func(s *MCPServer) { s.Headers = map[string]string{"A": "b"} }, stdio), "mcp.servers[tracker].headers", "for url servers"},
		{with(func(s *MCPServer) { s.Repos = []string{"nope"} }, stdio), "mcp.servers[tracker].repos[0]", `unknown repository "nope"`},
		{with(func(s *MCPServer) { s.Tools = []string{""} }, stdio), "mcp.servers[tracker].tools[0]", "must not be empty"},
		{with(func(s *MCPServer) { s.Channels = []string{""} }, stdio), "mcp.servers[tracker].channels[0]", "must not be empty"},
		{with(func(s *MCPServer) { s.Timeout = -time.Second }, stdio), "mcp.servers[tracker].timeout", "must be positive"},
	} {
		c := validConfig()
		c.MCP.Servers = tt.servers
		wantErr(t, c.Validate(), tt.key, tt.want)
	}
}

// The effective configuration the bot logs hides what an MCP server's env
// and headers hold, and the credentials of its URL.
func TestRedactedHidesMCPSecrets(t *testing.T) {
	c := validConfig()
	c.MCP.Servers = []MCPServer{
		{Name: "tracker", Command: "tracker-mcp", Env: map[string]string{"TRACKER_TOKEN": "SECRET-A"}},
		{Name: "docs", URL: "https://u:SECRET-B@mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer SECRET-C"}},
		{Name: "keyed", URL: "https://mcp.example.com/mcp?key=SECRET-D&v=2"},
	}
	r := c.Redacted()
	if out := fmt.Sprintf("%+v", r); strings.Contains(out, "SECRET") {
		t.Errorf("Redacted() shows an MCP secret:\n%s", out)
	}
	if r.MCP.Servers[0].Command != "tracker-mcp" || r.MCP.Servers[0].Env["TRACKER_TOKEN"] == "" || !strings.Contains(r.MCP.Servers[1].URL, "mcp.example.com") {
		t.Errorf("Redacted() lost what is no secret: %+v", r.MCP.Servers)
	}
	if c.MCP.Servers[0].Env["TRACKER_TOKEN"] != "SECRET-A" {
		t.Error("Redacted() modified its receiver's MCP env")
	}
}
