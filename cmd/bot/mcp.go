package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/sandbox"
)

// mcpServers are the configured MCP servers that are not disabled.
func mcpServers(cfg *config.Config) []bridge.MCPServer {
	var out []bridge.MCPServer
	for _, s := range cfg.MCP.Servers {
		if s.Disabled {
			continue
		}
		out = append(out, bridge.MCPServer{
			Server: mcptool.Server{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Network: s.Network,
				URL: s.URL, Headers: s.Headers, Tools: s.Tools, Timeout: s.Timeout},
			Repos: s.Repos, Channels: s.Channels,
		})
	}
	return out
}

// mcpSecrets are what the MCP servers' config holds that is secret: header
// values, the password a URL may carry, and its query and env values long
// enough to be a token (a URL's key shows in the errors that name it).
func mcpSecrets(cfg *config.Config) []string {
	var s []string
	// Only values long enough to be a token: a URL's query and a server's
	// env also hold plain settings (transport=stream), and every secret is
	// redacted wherever it shows. The bot unsets its own variables that
	// hold a secret's value.
	tokens := func(vs ...string) {
		for _, v := range vs {
			if len(v) >= 16 {
				s = append(s, v)
			}
		}
	}
	for _, srv := range cfg.MCP.Servers {
		s = append(s, urlSecrets(srv.URL)...)
		for _, v := range srv.Headers {
			s = append(s, v)
			// The credential alone, after its scheme in any case:
			// Bearer, bearer, Basic, token. Only after a scheme: the
			// tail of "application/json, text/event-stream" is no secret.
			if scheme, cred, ok := strings.Cut(v, " "); ok && isAuthScheme(scheme) {
				s = append(s, strings.TrimSpace(cred))
			}
		}
		for _, v := range srv.Env {
			tokens(v)
		}
	}
	return s
}

// isAuthScheme reports whether w can be an Authorization header's scheme
// (Bearer, Basic, token, Digest): a word of ASCII letters, digits and '-'.
func isAuthScheme(w string) bool {
	return w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == ""
}

// urlSecrets returns the secrets a configured URL may carry: its password,
// and each query value of token length (16+: `?transport=stream` is a
// setting), as written and decoded, a bare word (?TOKEN, which u.Query()
// takes for a name) included. An endpoint's error quotes its URL, query and
// all, and errors reach the thread.
func urlSecrets(raw string) []string {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return nil
	}
	var s []string
	if p, ok := u.User.Password(); ok {
		s = append(s, p)
	}
	tokens := func(vs ...string) {
		for _, v := range vs {
			if len(v) >= 16 {
				s = append(s, v)
			}
		}
	}
	for _, pair := range strings.FieldsFunc(u.RawQuery, func(r rune) bool { return r == '&' || r == ';' }) {
		_, v, ok := strings.Cut(pair, "=")
		if !ok {
			v = pair
		}
		tokens(v)
		if d, err := url.QueryUnescape(v); err == nil && d != v {
			tokens(d)
		}
	}
	return s
}

// checkMCP starts every configured server (stdio ones in the sandbox, in an
// empty folder) and lists its tools: one line per server, a problem when it
// does not answer.
func checkMCP(ctx context.Context, cfg *config.Config, sb *sandbox.Sandbox, w io.Writer) (problems []string) {
	servers := mcpServers(cfg)
	if len(servers) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp("", "threadsmith-check-mcp-")
	if err != nil {
		return []string{"mcp: " + err.Error()}
	}
	defer os.RemoveAll(dir)
	list := make([]mcptool.Server, len(servers))
	for i, s := range servers {
		list[i] = s.Server
	}
	// The Set hides the secrets from its errors, which may name a URL and
	// a key in it.
	set := mcptool.Open(ctx, list, mcptool.Options{Secrets: secrets(cfg), Launch: func(_ context.Context, s mcptool.Server) (*mcptool.Process, error) {
		return startInSandbox(sb.WithNetwork(s.Network), s, dir)
	}})
	defer set.Close()
	for _, st := range set.Status() {
		if st.Err != "" {
			problems = append(problems, fmt.Sprintf("mcp.servers[%s]: %s", st.Server, st.Err))
			continue
		}
		noun := "tools"
		if len(st.Tools) == 1 {
			noun = "tool"
		}
		fmt.Fprintf(w, "mcp: %s: %d %s: %s\n", st.Server, len(st.Tools), noun, strings.Join(st.Tools, ", "))
		if len(st.Unoffered) > 0 {
			// A typo in the allow-list would otherwise just leave a tool out.
			fmt.Fprintf(w, "mcp: %s: ⚠️ mcp.servers[%s].tools names what the server does not offer: %s\n", st.Server, st.Server, strings.Join(st.Unoffered, ", "))
		}
	}
	return problems
}

// startInSandbox runs a stdio server in sb as a thread's would run, with
// dir (empty) as the thread's worktree.
func startInSandbox(sb *sandbox.Sandbox, s mcptool.Server, dir string) (*mcptool.Process, error) {
	path, err := exec.LookPath(s.Command)
	if err != nil {
		return nil, err
	}
	return mcptool.Start(sb, s, path, mcptool.Where{Worktree: dir, PATH: os.Getenv("PATH"),
		Mounts: []sandbox.Mount{{Path: dir, Access: sandbox.ReadWrite}}}, nil)
}
