package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Validate reports every problem of c as Errors, each naming its key and why,
// or returns nil. It reports at most one problem per key.
//
// A disabled platform's section (slack.enabled: false, discord.enabled: false)
// is not checked at all, and unset ${VAR} references inside it are ignored: the
// section is not in use. Unset references elsewhere are reported as
// "<key>: environment variable <VAR> is not set"; note they are the variables
// that were unset when the file was parsed.
//
// llm.api_key may be empty only when llm.base_url is a loopback address
// (localhost, 127.0.0.0/8, ::1): local model servers usually need no key, and
// a hosted endpoint without one would fail on the first message instead of at
// start.
func (c *Config) Validate() error {
	var v collector
	for _, u := range c.unresolved {
		if c.inUse(u.key) {
			v.add(u.key, fmt.Sprintf("environment variable %s is not set", u.name))
		}
	}
	c.validateTop(&v)
	c.validateStorage(&v)
	c.validateLLM(&v)
	c.validateBudget(&v)
	c.validateAgent(&v)
	c.validateWorkspace(&v)
	c.validateSandbox(&v)
	c.validateMCP(&v)
	if c.Slack.Enabled {
		c.validateSlack(&v)
	}
	if c.Discord.Enabled {
		c.validateDiscord(&v)
	}
	c.validateSchedules(&v)
	return v.err()
}

// inUse reports whether a key matters to this configuration: everything but
// the sections of disabled platforms.
func (c *Config) inUse(key string) bool {
	switch {
	case key == "slack" || strings.HasPrefix(key, "slack."):
		return c.Slack.Enabled
	case key == "discord" || strings.HasPrefix(key, "discord."):
		return c.Discord.Enabled
	}
	return true
}

// DefaultMCPTimeout bounds one MCP tool call unless mcp.servers[].timeout says otherwise.
const DefaultMCPTimeout = 2 * time.Minute

// mcpNameRE is what a server name may be: it becomes part of tool names,
// which providers limit to [a-zA-Z0-9_-]{1,64}.
var mcpNameRE = regexp.MustCompile(`^[a-zA-Z0-9-]{1,24}$`)

func (c *Config) validateMCP(v *collector) {
	seen := map[string]bool{}
	for i, s := range c.MCP.Servers {
		key := fmt.Sprintf("mcp.servers[%d]", i)
		if s.Name != "" {
			key = fmt.Sprintf("mcp.servers[%s]", s.Name)
		}
		switch {
		case !mcpNameRE.MatchString(s.Name):
			v.add(key+".name", fmt.Sprintf("must be 1-24 letters, digits or '-' (got %q)", s.Name))
		case seen[s.Name]:
			v.add(key+".name", "is used twice")
		}
		seen[s.Name] = true
		switch {
		case s.Command == "" && s.URL == "":
			v.add(key, "needs a command (stdio server) or a url (Streamable HTTP server)")
		case s.Command != "" && s.URL != "":
			v.add(key, "has both a command and a url; give one")
		case s.URL != "":
			if p := httpURLProblem(s.URL); p != "" {
				v.add(key+".url", p)
			}
			if s.Network || len(s.Args) > 0 || len(s.Env) > 0 {
				v.add(key, "args, env and network are for stdio servers (command), not for a url")
			}
		default:
			if len(s.Headers) > 0 {
				v.add(key+".headers", "are for url servers, not for a command")
			}
		}
		for j, r := range s.Repos {
			if _, ok := c.Workspace.Repo(r); !ok {
				v.add(fmt.Sprintf("%s.repos[%d]", key, j), fmt.Sprintf("unknown repository %q", r))
			}
		}
		nonEmptyItems(v, key+".tools", s.Tools)
		nonEmptyItems(v, key+".channels", s.Channels)
		if s.Timeout < 0 {
			v.add(key+".timeout", "must be positive")
		}
	}
}

func (c *Config) validateSandbox(v *collector) {
	s := c.Sandbox
	if !s.Mode.valid() {
		v.add("sandbox.mode", fmt.Sprintf("must be auto, namespaces or none (got %q)", s.Mode))
	}
	if s.Memory < 16<<20 {
		v.add("sandbox.memory", fmt.Sprintf("must be at least 16MiB (got %s)", s.Memory))
	}
	positiveInt(v, "sandbox.processes", s.Processes)
	if s.Disk < 1<<20 {
		v.add("sandbox.disk", fmt.Sprintf("must be at least 1MiB (got %s)", s.Disk))
	}
	if s.Files < 100 {
		v.add("sandbox.files", fmt.Sprintf("must be at least 100 (got %d)", s.Files))
	}
	for i, p := range s.ReadOnlyPaths {
		if !filepath.IsAbs(p) {
			v.add(fmt.Sprintf("sandbox.read_only_paths[%d]", i), fmt.Sprintf("must be an absolute path (got %q)", p))
		}
	}
}

func (c *Config) validateTop(v *collector) {
	if strings.TrimSpace(c.DataDir) == "" {
		v.add("data_dir", "must not be empty")
	}
	positiveDuration(v, "shutdown_grace", c.ShutdownGrace)
	positiveDuration(v, "run_timeout", c.RunTimeout)
	positiveDuration(v, "idle_evict", c.IdleEvict)
	if c.MaxConcurrentRuns < 1 {
		v.add("max_concurrent_runs", fmt.Sprintf("must be at least 1 (got %d)", c.MaxConcurrentRuns))
	}
	if !c.Log.Level.valid() {
		v.add("log.level", fmt.Sprintf("must be debug, info, warn or error (got %q)", c.Log.Level))
	}
	if !c.Log.Format.valid() {
		v.add("log.format", fmt.Sprintf("must be auto, json or text (got %q)", c.Log.Format))
	}
	if c.HTTP.Listen != "" {
		if _, _, err := net.SplitHostPort(c.HTTP.Listen); err != nil {
			v.add("http.listen", fmt.Sprintf("must be host:port or :port, such as 127.0.0.1:9090 (got %q)", c.HTTP.Listen))
		}
	}
	c.validateSessionPages(v)
}

func (c *Config) validateLLM(v *collector) {
	l := c.LLM
	if l.Provider != "" && !l.Provider.valid() {
		v.add("llm.provider", fmt.Sprintf("must be openai or anthropic (got %q)", l.Provider))
	}
	if p := httpURLProblem(l.BaseURL); p != "" {
		v.add("llm.base_url", p+" (such as "+l.Provider.DefaultBaseURL()+")")
	}
	if l.APIKey == "" && !isLoopbackURL(l.BaseURL) {
		env := "OPENAI_API_KEY"
		if l.Provider == ProviderAnthropic {
			env = "ANTHROPIC_API_KEY"
		}
		v.add("llm.api_key", "required: write api_key: ${"+env+"} under llm: and set "+env+" (only a loopback llm.base_url, such as a local model server, may go without)")
	}
	if !l.Reasoning.valid() {
		v.add("llm.reasoning", fmt.Sprintf("must be off, minimal, low, medium or high (got %q)", l.Reasoning))
	}
	if strings.TrimSpace(l.Model) == "" {
		v.add("llm.model", "must not be empty")
	}
	c.validateLimits(v, "llm.", l.ContextWindow, l.MaxOutputTokens, false)
	validatePrice(v, "llm.price", l.Price)

	seen := make(map[string]bool)
	for i, m := range l.Models {
		key := fmt.Sprintf("llm.models[%d].", i)
		switch {
		case strings.TrimSpace(m.Name) == "":
			v.add(key+"name", "must not be empty")
		case m.Name == l.Model:
			v.add(key+"name", fmt.Sprintf("%q is llm.model, which is always available: configure it under llm", m.Name))
		case seen[m.Name]:
			v.add(key+"name", fmt.Sprintf("%q is listed twice", m.Name))
		}
		seen[m.Name] = true
		// Empty provider and base_url mean llm's (filled in by ParseConfig); a
		// model on llm's endpoint shares llm.api_key, checked above.
		if m.Provider != "" && !m.Provider.valid() {
			v.add(key+"provider", fmt.Sprintf("must be openai or anthropic (got %q)", m.Provider))
		}
		if m.BaseURL != "" {
			if p := httpURLProblem(m.BaseURL); p != "" {
				v.add(key+"base_url", p+" (such as "+m.Provider.DefaultBaseURL()+")")
			}
		}
		ownEndpoint := m.BaseURL != "" && (m.BaseURL != l.BaseURL || (m.Provider != "" && m.Provider != l.Provider))
		if ownEndpoint && m.APIKey == "" && !isLoopbackURL(m.BaseURL) {
			v.add(key+"api_key", "required for a model on another endpoint than llm.base_url (only a loopback base_url may go without)")
		}
		if !m.Reasoning.valid() {
			v.add(key+"reasoning", fmt.Sprintf("must be off, minimal, low, medium or high (got %q)", m.Reasoning))
		}
		c.validateLimits(v, key, m.ContextWindow, m.MaxOutputTokens, true)
		validatePrice(v, key+"price", m.Price)
	}
}

// validateLimits checks one model's token limits; prefix is "llm." or
// "llm.models[i].". The main model's window against reserve_tokens is checked
// (once) under agent.compaction.
func (c *Config) validateLimits(v *collector, prefix string, window, maxOut int, checkReserve bool) {
	switch {
	case maxOut <= 0:
		v.add(prefix+"max_output_tokens", fmt.Sprintf("must be greater than 0 (got %d)", maxOut))
	case window <= maxOut:
		v.add(prefix+"context_window", fmt.Sprintf("must be greater than %smax_output_tokens (%d)", prefix, maxOut))
	case checkReserve && window <= c.Agent.Compaction.ReserveTokens:
		v.add(prefix+"context_window", fmt.Sprintf("must be greater than agent.compaction.reserve_tokens (%d)", c.Agent.Compaction.ReserveTokens))
	}
}

func validatePrice(v *collector, key string, p Price) {
	for _, f := range []struct {
		name string
		val  float64
	}{{"input", p.Input}, {"output", p.Output}, {"cache_read", p.CacheRead}, {"cache_write", p.CacheWrite}} {
		if f.val < 0 {
			v.add(key+"."+f.name, "must not be negative")
		}
	}
}

func (c *Config) validateBudget(v *collector) {
	for _, f := range []struct {
		key string
		val float64
	}{{"budget.per_user_daily", c.Budget.PerUserDaily}, {"budget.per_thread", c.Budget.PerThread}} {
		if f.val < 0 || math.IsNaN(f.val) || math.IsInf(f.val, 0) {
			v.add(f.key, fmt.Sprintf("must be an amount of 0 or more, in the currency of llm.price (0: no limit; got %v)", f.val))
		}
	}
}

func (c *Config) validateAgent(v *collector) {
	a := c.Agent
	if !a.BusyMode.valid() {
		v.add("agent.busy_mode", fmt.Sprintf("must be followUp or steer (got %q)", a.BusyMode))
	}
	if !a.Approval.valid() {
		v.add("agent.approval", fmt.Sprintf("must be none or plan (got %q)", a.Approval))
	}
	if !a.SteerMode.valid() {
		v.add("agent.steer_mode", fmt.Sprintf("must be one-at-a-time or all (got %q)", a.SteerMode))
	}
	if !a.FollowUpMode.valid() {
		v.add("agent.follow_up_mode", fmt.Sprintf("must be one-at-a-time or all (got %q)", a.FollowUpMode))
	}

	r := a.Retry
	if r.MaxRetries < 0 {
		v.add("agent.retry.max_retries", fmt.Sprintf("must not be negative (got %d)", r.MaxRetries))
	}
	if r.Enabled {
		positiveDuration(v, "agent.retry.base_delay", r.BaseDelay)
		if r.MaxDelay < r.BaseDelay {
			v.add("agent.retry.max_delay", fmt.Sprintf("must be at least agent.retry.base_delay (%s)", r.BaseDelay))
		}
	}

	// Checked even when compaction is disabled: !compact works either way.
	cp := a.Compaction
	switch {
	case cp.ReserveTokens <= 0:
		v.add("agent.compaction.reserve_tokens", fmt.Sprintf("must be greater than 0 (got %d)", cp.ReserveTokens))
	case cp.ReserveTokens >= c.LLM.ContextWindow && c.LLM.ContextWindow > c.LLM.MaxOutputTokens:
		// (a window already too small for max_output_tokens is reported under llm only)
		v.add("agent.compaction.reserve_tokens", fmt.Sprintf("must be less than llm.context_window (%d)", c.LLM.ContextWindow))
	}
	if cp.KeepRecentTokens <= 0 {
		v.add("agent.compaction.keep_recent_tokens", fmt.Sprintf("must be greater than 0 (got %d)", cp.KeepRecentTokens))
	}

	positiveDuration(v, "agent.bash_timeout", a.BashTimeout)
	if a.NotifyAfter < 0 {
		v.add("agent.notify_after", fmt.Sprintf("must be a duration such as 1m, or 0s to mention nobody (got %s)", a.NotifyAfter))
	}
	nonEmptyItems(v, "agent.skills_dirs", a.SkillsDirs)
	nonEmptyItems(v, "agent.prompts_dirs", a.PromptsDirs)
	for _, name := range sortedKeys(a.BashEnv) {
		if !validVarName(name) {
			v.add("agent.bash_env."+name, "is not a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)")
		}
	}
}

var repoName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

func (c *Config) validateWorkspace(v *collector) {
	w := c.Workspace
	if w.BranchPrefix == "" {
		v.add("workspace.branch_prefix", "must not be empty: pushes are confined to branches below it")
	} else if p := refPrefixProblem(w.BranchPrefix); p != "" {
		v.add("workspace.branch_prefix", p)
	}
	for _, f := range []struct{ key, val string }{{"workspace.author.name", w.Author.Name}, {"workspace.author.email", w.Author.Email}} {
		switch {
		case strings.TrimSpace(f.val) == "":
			v.add(f.key, "must not be empty")
		case strings.ContainsAny(f.val, "<>\n\x00"):
			v.add(f.key, "must not contain '<', '>' or a newline")
		}
	}
	positiveDuration(v, "workspace.idle_ttl", w.IdleTTL)
	if w.MaxDownloadBytes <= 0 {
		v.add("workspace.max_download_bytes", fmt.Sprintf("must be greater than 0 (got %d)", w.MaxDownloadBytes))
	}

	seen := make(map[string]bool)
	for i, r := range w.Repos {
		key := fmt.Sprintf("workspace.repos[%d].", i)
		switch {
		case r.Name == "":
			v.add(key+"name", "must not be empty")
		case !repoName.MatchString(r.Name):
			v.add(key+"name", fmt.Sprintf("%q: use letters, digits, '.', '_' and '-' only (users type it as repo=<name>)", r.Name))
		case seen[r.Name]:
			v.add(key+"name", fmt.Sprintf("%q is used by two repos", r.Name))
		}
		seen[r.Name] = true
		if p := repoURLProblem(r.URL); p != "" {
			v.add(key+"url", p)
		}
		if p := refNameProblem(r.DefaultBranch); p != "" {
			v.add(key+"default_branch", p)
		}
		switch strings.ToLower(r.Forge) {
		case "", "github", "gitlab", "gitea", "forgejo", "bitbucket", "none":
		default:
			v.add(key+"forge", fmt.Sprintf("must be github, gitlab, gitea, forgejo, bitbucket or none (got %q)", r.Forge))
		}
		if r.APIURL != "" {
			if p := httpURLProblem(r.APIURL); p != "" {
				v.add(key+"api_url", p)
			}
		}
		if !r.PullRequests.valid() {
			v.add(key+"pull_requests", fmt.Sprintf("must be draft, ready or off (got %q)", r.PullRequests))
		}
		if !r.Push.valid() {
			v.add(key+"push", fmt.Sprintf("must be auto or approve (got %q)", r.Push))
		}
		if !r.Approval.valid() {
			v.add(key+"approval", fmt.Sprintf("must be none or plan (got %q)", r.Approval))
		}
		for j, a := range r.Approvers {
			if strings.TrimSpace(a) == "" {
				v.add(fmt.Sprintf("%sapprovers[%d]", key, j), "must be a Slack or Discord user id, not empty")
			}
		}
		if r.WebhookSecret != "" && c.HTTP.Listen == "" {
			v.add(key+"webhook_secret", "needs http.listen: the forge's webhook is sent to its /hooks/"+r.Name+" (else leave it empty and use !review)")
		}
		c.validateIssues(v, key+"issues", r)
	}

	// Without a default, a thread that names no repository chooses one in
	// the chat.
	if w.DefaultRepo != "" {
		if _, ok := w.Repo(w.DefaultRepo); !ok {
			v.add("workspace.default_repo", fmt.Sprintf("%q is not a configured repo %s", w.DefaultRepo, c.knownRepos()))
		}
	}
}

// knownRepos is the parenthesised list of repo names for error messages.
func (c *Config) knownRepos() string {
	if len(c.Workspace.Repos) == 0 {
		return "(workspace.repos is empty)"
	}
	return "(one of: " + strings.Join(c.Workspace.RepoNames(), ", ") + ")"
}

func (c *Config) validateChannels(v *collector, key string, channels map[string]ChannelRepos) {
	for _, ch := range sortedKeys(channels) {
		repos := channels[ch]
		switch {
		case len(repos) == 0:
			v.add(key+"."+ch, "must name a repository (or a list of them, the first being the channel's)")
		case repos[0] == AnyRepo:
			v.add(key+"."+ch, fmt.Sprintf("the first entry is the channel's repository: name one before %q", AnyRepo))
		}
		for _, r := range repos {
			if r == AnyRepo {
				continue
			}
			if _, ok := c.Workspace.Repo(r); !ok {
				v.add(key+"."+ch, fmt.Sprintf("%q is not a configured repo %s", r, c.knownRepos()))
				break
			}
		}
	}
}

func (c *Config) validateSlack(v *collector) {
	s := c.Slack
	if !s.Mode.valid() {
		v.add("slack.mode", fmt.Sprintf("must be socket or http (got %q)", s.Mode))
	}
	switch s.Streaming {
	case "", "off", "auto":
	default:
		v.add("slack.streaming", fmt.Sprintf("must be auto or off (got %q)", s.Streaming))
	}
	tokenWithPrefix(v, "slack.bot_token", s.BotToken, "xoxb-", "required when slack.enabled is true: the bot token (xoxb-…)")
	switch s.Mode {
	case SlackSocket:
		tokenWithPrefix(v, "slack.app_token", s.AppToken, "xapp-", "required in socket mode: an app-level token (xapp-…) with connections:write")
	case SlackHTTP:
		if s.SigningSecret == "" {
			v.add("slack.signing_secret", "required in http mode: the app's signing secret")
		}
		if s.Listen == "" {
			v.add("slack.listen", "required in http mode: the address to listen on, such as :3000")
		} else if _, _, err := net.SplitHostPort(s.Listen); err != nil {
			v.add("slack.listen", fmt.Sprintf("must be host:port or :port, such as :3000 (got %q)", s.Listen))
		}
	}
	if s.APIURL != "" {
		if p := httpURLProblem(s.APIURL); p != "" {
			v.add("slack.api_url", p)
		} else if !strings.HasSuffix(s.APIURL, "/") {
			v.add("slack.api_url", `must end with "/" (it replaces https://slack.com/api/)`)
		}
	}
	c.validateChannels(v, "slack.channels", s.Channels)
	nonEmptyItems(v, "slack.allowed_users", s.AllowedUsers)
	nonEmptyItems(v, "slack.allowed_channels", s.AllowedChannels)
	positiveFloat(v, "slack.rate.post_per_second", s.Rate.PostPerSecond)
	positiveInt(v, "slack.rate.post_burst", s.Rate.PostBurst)
	positiveFloat(v, "slack.rate.update_per_message_per_second", s.Rate.UpdatePerMessagePerSecond)
	positiveInt(v, "slack.rate.update_per_minute", s.Rate.UpdatePerMinute)
	positiveInt(v, "slack.rate.status_per_minute", s.Rate.StatusPerMinute)
	positiveInt(v, "slack.rate.append_per_minute", s.Rate.AppendPerMinute)
}

var snowflake = regexp.MustCompile(`^[0-9]+$`)

func (c *Config) validateDiscord(v *collector) {
	d := c.Discord
	if d.Token == "" {
		v.add("discord.token", "required when discord.enabled is true: the bot token")
	}
	if d.ApplicationID != "" && !snowflake.MatchString(d.ApplicationID) {
		v.add("discord.application_id", fmt.Sprintf("must be a numeric id (got %q)", d.ApplicationID))
	}
	for i, g := range d.GuildIDs {
		if !snowflake.MatchString(g) {
			v.add(fmt.Sprintf("discord.guild_ids[%d]", i), fmt.Sprintf("must be a numeric guild id (got %q)", g))
		}
	}
	if d.APIURL != "" {
		if p := httpURLProblem(d.APIURL); p != "" {
			v.add("discord.api_url", p)
		}
	}
	c.validateChannels(v, "discord.channels", d.Channels)
	nonEmptyItems(v, "discord.allowed_roles", d.AllowedRoles)
	nonEmptyItems(v, "discord.allowed_users", d.AllowedUsers)
	positiveInt(v, "discord.rate.edits_per_5s", d.Rate.EditsPer5s)
	positiveInt(v, "discord.rate.requests_per_second", d.Rate.RequestsPerSecond)
	switch {
	case d.ShardCount < 0:
		v.add("discord.shard_count", fmt.Sprintf("must be 0 (one connection) or the number of shards (got %d)", d.ShardCount))
	case d.ShardID < 0 || d.ShardID >= max(d.ShardCount, 1):
		v.add("discord.shard_id", fmt.Sprintf("must be between 0 and shard_count-1 (got %d of %d)", d.ShardID, d.ShardCount))
	}
}

// tokenWithPrefix checks a required token's kind without ever quoting it.
func tokenWithPrefix(v *collector, key, token, prefix, missing string) {
	switch {
	case token == "":
		v.add(key, missing)
	case !strings.HasPrefix(token, prefix):
		v.add(key, fmt.Sprintf("must start with %q (is this the right token?)", prefix))
	}
}

func positiveDuration(v *collector, key string, d time.Duration) {
	if d <= 0 {
		v.add(key, fmt.Sprintf("must be a positive duration such as 30s (got %s)", d))
	}
}

func positiveInt(v *collector, key string, n int) {
	if n <= 0 {
		v.add(key, fmt.Sprintf("must be greater than 0 (got %d)", n))
	}
}

func positiveFloat(v *collector, key string, f float64) {
	if !(f > 0) {
		v.add(key, fmt.Sprintf("must be greater than 0 (got %g)", f))
	}
}

func nonEmptyItems(v *collector, key string, items []string) {
	for i, s := range items {
		if strings.TrimSpace(s) == "" {
			v.add(fmt.Sprintf("%s[%d]", key, i), "must not be empty")
		}
	}
}

// httpURLProblem says why s is not an absolute http(s) URL, without quoting it
// (a URL may carry credentials).
func httpURLProblem(s string) string {
	u, err := url.Parse(s)
	if s == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "must be an absolute http(s) URL"
	}
	return ""
}

// IsLoopbackURL reports whether s is a URL of this host (localhost or a
// loopback address): a local model server, for llm.base_url.
func IsLoopbackURL(s string) bool { return isLoopbackURL(s) }

func isLoopbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// repoURLProblem accepts remote URLs (http, https, ssh, git), scp-like
// addresses (git@host:path), local paths and file:// URLs. Credentials in the
// URL are refused: git would write them into the workspace's .git/config,
// which docs/behaviour.md §7 forbids; the token key exists for that.
func repoURLProblem(s string) string {
	if strings.TrimSpace(s) == "" {
		return "must not be empty"
	}
	if !strings.Contains(s, "://") {
		return "" // a local path or an scp-like address
	}
	u, err := url.Parse(s)
	if err != nil {
		return "is not a valid URL"
	}
	switch u.Scheme {
	case "http", "https", "ssh", "git":
		if u.Host == "" {
			return "has no host"
		}
	case "file":
		if u.Path == "" {
			return "file:// URL has no path"
		}
	default:
		return fmt.Sprintf("scheme %q is not supported (use https, ssh, git, file:// or a local path)", u.Scheme)
	}
	if u.User != nil {
		_, hasPassword := u.User.Password()
		if hasPassword || u.Scheme == "http" || u.Scheme == "https" {
			return "must not contain credentials: put them in the repo's token key, which is never written into the workspace"
		}
	}
	return ""
}

// minSessionKey is the shortest http.session_key accepted: a short key can be
// guessed offline from one link.
const minSessionKey = 32

func (c *Config) validateSessionPages(v *collector) {
	h := c.HTTP
	if h.PublicURL != "" {
		u, err := url.Parse(h.PublicURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.add("http.public_url", "must be an http(s) URL such as https://bot.example.com")
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			v.add("http.public_url", "must not carry credentials, a query or a fragment")
		}
		if h.Listen == "" {
			v.add("http.public_url", "needs http.listen: the pages are served there")
		}
		if h.SessionKey == "" {
			v.add("http.session_key", "is required with http.public_url: it signs the links")
		}
	}
	if h.SessionKey != "" && len(h.SessionKey) < minSessionKey {
		v.add("http.session_key", fmt.Sprintf("must be at least %d characters (such as the output of openssl rand -hex 32)", minSessionKey))
	}
	if h.LinkTTL <= 0 {
		v.add("http.link_ttl", "must be positive, such as 168h")
	}
	if h.AuthHeader != "" && !validHeaderName(h.AuthHeader) {
		v.add("http.auth_header", fmt.Sprintf("must be a header name such as X-Forwarded-User (got %q)", h.AuthHeader))
	}
}

// validHeaderName reports whether s is an HTTP header name (an RFC 9110 token).
func validHeaderName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return s != ""
}
