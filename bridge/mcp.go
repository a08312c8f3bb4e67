package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/safefile"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/sandbox"
)

// MCPServer is a configured MCP server and the threads that get it.
type MCPServer struct {
	mcptool.Server
	// Repos and Channels limit the threads that get the server; empty: all.
	Repos, Channels []string
}

// parentChanneler is an adapter whose threads are channels of their own
// (Discord): it names the channel a thread lives in.
type parentChanneler interface {
	ParentChannel(ctx context.Context, ref chat.ThreadRef) string
}

// mcpServersFor lists the servers a thread gets: the configured ones its repo
// and channel allow, then (if the operator allows it) the stdio servers its
// repository declares.
func (t *thread) mcpServersFor(ctx context.Context) []mcptool.Server {
	var out []mcptool.Server
	channels := []string{t.ref.Channel}
	if pc, ok := t.p.Adapter.(parentChanneler); ok && slices.ContainsFunc(t.b.cfg.MCPServers, func(s MCPServer) bool { return len(s.Channels) > 0 }) {
		if parent := pc.ParentChannel(ctx, t.ref); parent != t.ref.Channel {
			channels = append(channels, parent)
		}
	}
	for _, s := range t.b.cfg.MCPServers {
		if len(s.Repos) > 0 && !slices.Contains(s.Repos, t.rec.Repo) {
			continue
		}
		if len(s.Channels) > 0 && !slices.ContainsFunc(channels, func(c string) bool { return slices.Contains(s.Channels, c) }) {
			continue
		}
		out = append(out, s.Server)
	}
	if t.b.cfg.MCPRepoServers {
		repo, err := repoMCPServers(t.ws.Root())
		if err != nil {
			t.say("⚠️ This repository's MCP server list could not be used: " + err.Error())
		}
		out = withRepoServers(out, repo)
	}
	return out
}

// withRepoServers adds a repository's servers to the configured ones; the
// operator's server of a name wins over the repository's.
func withRepoServers(configured, repo []mcptool.Server) []mcptool.Server {
	out := configured
	for _, s := range repo {
		if slices.ContainsFunc(configured, func(o mcptool.Server) bool { return o.Name == s.Name }) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// maxRepoMCPBytes is the largest repository MCP server list read.
const maxRepoMCPBytes = 64 << 10

// repoMCPServers reads a repository's .threadsmith/mcp.json, else .mcp.json
// (the format other agents use: {"mcpServers": {name: {command, args, env}}}).
// Repository content is untrusted: only stdio servers are taken, without
// network and with the environment exactly as written (no ${VAR} of the
// bot's is expanded), and the file is read through safefile: a link, a pipe
// or a device in its place is refused (a sentence for the thread).
func repoMCPServers(root string) ([]mcptool.Server, error) {
	r, err := safefile.OpenRoot(root, "the worktree")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var data []byte
	var name string
	for _, name = range []string{".threadsmith/mcp.json", ".mcp.json"} {
		data, err = r.ReadFile(name, maxRepoMCPBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if _, ok := safefile.Refused(err); ok {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		break
	}
	if data == nil {
		return nil, nil
	}
	var file struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			URL     string            `json:"url"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %v", name, err)
	}
	var out []mcptool.Server
	var skipped []string
	for _, n := range slices.Sorted(maps.Keys(file.MCPServers)) {
		s := file.MCPServers[n]
		if s.Command == "" || !validServerName(n) {
			skipped = append(skipped, n)
			continue
		}
		out = append(out, mcptool.Server{Name: n, Command: s.Command, Args: s.Args, Env: s.Env, FromRepo: true})
	}
	if len(skipped) > 0 {
		return out, fmt.Errorf("%s: left out %s (only stdio servers with a command, named with letters, digits and '-', are taken from a repository)", name, strings.Join(skipped, ", "))
	}
	return out, nil
}

func validServerName(n string) bool {
	if n == "" || len(n) > 24 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// openMCP starts the thread's MCP servers (once per thread).
func (t *thread) openMCP(ctx context.Context) {
	if t.mcp != nil {
		return
	}
	servers := t.mcpServersFor(ctx)
	if len(servers) == 0 {
		return
	}
	t.mcp = mcptool.Open(ctx, servers, mcptool.Options{
		Launch:  t.launchMCP,
		Logger:  t.log.With("component", "mcp"),
		Secrets: t.b.cfg.Secrets,
		// A server's new tool list reaches the session through the
		// thread's owner, like everything else that changes it.
		OnChange: func() { t.post(msgToolsChanged{}) },
		// A server given up (it died twice) is reported in the thread, not
		// only to the model in its tool results.
		OnDown: func(server string, err error) { t.post(msgMCPDown{server, err}) },
	})
	var failed []string
	for _, st := range t.mcp.Status() {
		if st.Err != "" {
			failed = append(failed, fmt.Sprintf("`%s` (%s)", st.Server, st.Err))
		}
	}
	if len(failed) > 0 {
		// The Set's errors name a server's URL without a key in it
		// (Options.Secrets).
		t.say("⚠️ These MCP servers did not start, so their tools are missing: " + strings.Join(failed, "; "))
	}
}

// mcpDown tells the thread that an MCP server was given up. err is the
// Set's, without Options.Secrets.
func (t *thread) mcpDown(server string, err error) {
	msg := fmt.Sprintf("⚠️ MCP server `%s`: %v", server, err)
	if t.view == nil {
		t.say(msg)
		return
	}
	t.note(msg) // under the call that found it dead
}

// sessionTools are the built-in tools and the MCP servers' tools, each
// decorated the same way (output cap, redaction, timing, panic guard).
func (t *thread) sessionTools() []agent.Tool {
	opts := tools.Options{Secrets: t.b.cfg.Secrets, Logger: t.log}
	ts := tools.New(t.tws, opts)
	if t.mcp != nil {
		for _, mt := range t.mcp.Tools() {
			ts = append(ts, tools.Decorate(mt, opts))
		}
	}
	return ts
}

// refreshTools hands the session the current tools (an MCP server's list
// changed).
func (t *thread) refreshTools() {
	if t.sess == nil || t.planTools != nil {
		return // a plan run has the read-only tools: its end refreshes them
	}
	// The built-in tools stay the session's own: they share the record of
	// what the session has read, which edit checks (new ones would forget
	// every read). Only the MCP servers' tools are taken anew.
	var ts []agent.Tool
	for _, tl := range t.sess.Tools() {
		if !strings.Contains(tl.Spec().Name, "__") {
			ts = append(ts, tl)
		}
	}
	opts := tools.Options{Secrets: t.b.cfg.Secrets, Logger: t.log}
	for _, mt := range t.mcp.Tools() {
		ts = append(ts, tools.Decorate(mt, opts))
	}
	t.sess.SetTools(ts)
}

// launchMCP starts a stdio server in the thread's sandbox: it sees what bash
// sees, has the network only when its config says so (never for a
// repository's server), gets only the environment its config names, and
// runs where nothing the agent wrote becomes its code (mcptool.Start).
func (t *thread) launchMCP(_ context.Context, s mcptool.Server) (*mcptool.Process, error) {
	path, err := serverPath(s, t.tws.Root())
	if err != nil {
		return nil, err
	}
	sb := t.b.cfg.Sandbox
	if sb == nil {
		sb = sandbox.None()
	}
	sb = sb.WithNetwork(s.Network && !s.FromRepo)
	log := t.log.With("component", "mcp", "mcp_server", s.Name)
	lines := 0
	return mcptool.Start(sb, s, path, mcptool.Where{
		Worktree: t.tws.Root(), Mounts: t.tws.Mounts(), PATH: os.Getenv("PATH"),
	}, func(line string) {
		// What a server says on stderr is for the operator's logs only (it
		// may echo its environment), redacted and capped.
		if lines++; lines <= 200 {
			log.Debug("mcp server stderr", "line", tools.RedactString(line, t.b.cfg.Secrets))
		}
	})
}

// serverPath finds a stdio server's program: on PATH, or for a repository's
// server a relative path such as ./scripts/mcp.sh in its worktree (where it
// runs), never one that leads out of it. The worktree is the agent's to
// write, so the program is looked at through its root: a link there is
// followed only within it, and the answer says nothing of what lies outside.
func serverPath(s mcptool.Server, root string) (string, error) {
	if !s.FromRepo || !strings.Contains(s.Command, "/") || filepath.IsAbs(s.Command) {
		return exec.LookPath(s.Command)
	}
	p := filepath.Join(root, s.Command)
	rel, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%s leads out of the repository", s.Command)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", err
	}
	defer r.Close()
	if fi, err := r.Stat(rel); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not a program in the repository", s.Command)
	}
	return p, nil
}

// toolsText answers !tools: the session's tools, by server.
func (t *thread) toolsText(s *agent.Session) string {
	var b strings.Builder
	var builtin []string
	for _, tl := range s.Tools() {
		if !strings.Contains(tl.Spec().Name, "__") {
			builtin = append(builtin, "`"+tl.Spec().Name+"`")
		}
	}
	b.WriteString("🧰 Built in: " + strings.Join(builtin, ", "))
	if t.mcp == nil {
		b.WriteString("\nNo MCP servers in this thread.")
		return b.String()
	}
	for _, st := range t.mcp.Status() {
		from := ""
		if st.FromRepo {
			from = " (from the repository)"
		}
		switch {
		case st.Err != "":
			fmt.Fprintf(&b, "\nMCP `%s`%s: not available — %s", st.Server, from, st.Err)
		case len(st.Tools) == 0:
			fmt.Fprintf(&b, "\nMCP `%s`%s: no tools", st.Server, from)
		default:
			names := make([]string, len(st.Tools))
			for i, n := range st.Tools {
				names[i] = "`" + n + "`"
			}
			fmt.Fprintf(&b, "\nMCP `%s`%s: %s", st.Server, from, strings.Join(names, ", "))
		}
	}
	return b.String()
}
