// Package config is threadsmith's configuration: one YAML file
// (config.example.yaml at the repository root documents every key), read once
// at start and passed down as a value. There is no global configuration.
//
// The life of a configuration is Default → Parse → Validate; Load does all
// three for a file and is what the bot calls:
//
//   - Parse starts from Default(), so every absent key keeps its default, then
//     overlays the file. Unknown keys, values of the wrong type, duplicate keys
//     and YAML syntax errors are rejected, each naming its key or its line.
//   - Validate checks the values and returns Errors, at most one per key.
//
// # Environment variables
//
// ${NAME} and ${NAME:-text} are expanded inside scalar values, never in keys
// (so not in the channel ids of slack.channels nor the names of agent.bash_env).
// Expansion happens after YAML parsing, on each value's text, so a secret
// containing ':', '#', quotes or newlines cannot change the file's structure.
//
//   - ${NAME:-text} gives text when NAME is unset or empty, as in the shell;
//     ${NAME:-} is therefore "empty when unset" and never an error. text is
//     literal and cannot contain '}'.
//   - "$${" is a literal "${" (the escape). Any other '$' is literal, so a
//     value such as "pa$$word" needs no escaping.
//   - An unset NAME without a default is not a Parse error: the key keeps its
//     default and the reference is recorded with the key that used it. Validate
//     reports it ("slack.bot_token: environment variable SLACK_BOT_TOKEN is not
//     set") only when the key is in use, i.e. not inside the section of a
//     disabled platform. This is what lets the example file keep
//     token: ${DISCORD_BOT_TOKEN} under discord.enabled: false.
//   - A malformed reference (no closing '}', a bad name) is a Parse error.
//   - An unquoted reference fills numbers, booleans and durations
//     (max_concurrent_runs: ${RUNS}); a quoted one is always a string. Inside
//     flow collections ([ ] and { }) a reference must be quoted, because YAML
//     reads '{' there as the start of a mapping.
//
// After a successful Parse, lists and maps that are empty are nil, every repo
// has a default_branch ("main" when not given) and every entry of llm.models
// has a context window and an output limit (llm's when not given).
package config

import (
	"log/slog"
	"strings"
	"time"
)

// Default URLs used when an api_url key is empty.
const (
	DefaultSlackAPIURL   = "https://slack.com/api/"
	DefaultDiscordAPIURL = "https://discord.com/"
)

// Platform names, as returned by Config.Platforms.
const (
	PlatformSlack   = "slack"
	PlatformDiscord = "discord"
)

// Config is the whole configuration file.
type Config struct {
	// DataDir holds the SQLite file <data_dir>/threadsmith.db and the workspaces.
	DataDir string `yaml:"data_dir"`
	// ShutdownGrace bounds a graceful shutdown on SIGINT/SIGTERM.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// RunTimeout aborts a runaway run.
	RunTimeout time.Duration `yaml:"run_timeout"`
	// IdleEvict unloads a thread nobody wrote in for this long from memory;
	// its session stays in storage and its next message loads it again.
	IdleEvict time.Duration `yaml:"idle_evict"`
	// MaxConcurrentRuns caps simultaneous runs across all threads; more wait.
	MaxConcurrentRuns int       `yaml:"max_concurrent_runs"`
	Log               Log       `yaml:"log"`
	LLM               LLM       `yaml:"llm"`
	Budget            Budget    `yaml:"budget"`
	Agent             Agent     `yaml:"agent"`
	Workspace         Workspace `yaml:"workspace"`
	Sandbox           Sandbox   `yaml:"sandbox"`
	MCP               MCP       `yaml:"mcp"`
	HTTP              HTTP      `yaml:"http"`
	Slack             Slack     `yaml:"slack"`
	Discord           Discord   `yaml:"discord"`
	// Storage is the database: SQLite in data_dir (default) or PostgreSQL.
	Storage Storage `yaml:"storage"`
	// Schedules are requests the bot makes on a calendar.
	Schedules []Schedule `yaml:"schedules"`

	// unresolved are the ${VAR} references Parse found unset; Validate reports
	// the ones whose key is in use.
	unresolved []unresolvedVar
}

// Log configures log/slog output.
type Log struct {
	Level  LogLevel  `yaml:"level"`
	Format LogFormat `yaml:"format"`
}

// LLM is the main model's endpoint and the models the bot may use.
type LLM struct {
	// Provider is the API base_url speaks: openai (any OpenAI-compatible
	// endpoint, the default) or anthropic (the Messages API).
	Provider Provider `yaml:"provider"`
	// BaseURL is the API base: including /v1 for openai, without it for anthropic.
	BaseURL string `yaml:"base_url"`
	APIKey  string `yaml:"api_key"`
	// Model is the main model: the one every session starts with.
	Model           string `yaml:"model"`
	ContextWindow   int    `yaml:"context_window"`
	MaxOutputTokens int    `yaml:"max_output_tokens"`
	// Reasoning is the main model's reasoning effort / thinking level.
	Reasoning Reasoning `yaml:"reasoning"`
	// Price is the main model's price; all zero means the built-in price of
	// known models, or no cost.
	Price Price `yaml:"price"`
	// Models are the other models `!model` may switch to.
	Models []Model `yaml:"models"`
}

// Budget caps what the models cost, in the currency of their prices
// (llm.price); 0 is no limit. A reply of a model without a price costs
// nothing here: a budget cannot be enforced for that model.
type Budget struct {
	// PerUserDaily caps what one person's requests cost in a day (UTC):
	// a run counts for the person whose message started it, on the day it
	// ends.
	PerUserDaily float64 `yaml:"per_user_daily"`
	// PerThread caps what one thread costs, over all its sessions.
	PerThread float64 `yaml:"per_thread"`
}

// On reports whether any budget is set.
func (b Budget) On() bool { return b.PerUserDaily > 0 || b.PerThread > 0 }

// Model is one model a session may use. Empty endpoint fields are llm's when
// the provider is llm's, else the provider's public API (see ParseConfig).
type Model struct {
	Name     string   `yaml:"name"`
	Provider Provider `yaml:"provider"`
	BaseURL  string   `yaml:"base_url"`
	APIKey   string   `yaml:"api_key"`
	// ID is the model's id at the provider; default Name.
	ID              string    `yaml:"model"`
	ContextWindow   int       `yaml:"context_window"`
	MaxOutputTokens int       `yaml:"max_output_tokens"`
	Reasoning       Reasoning `yaml:"reasoning"`
	Price           Price     `yaml:"price"`
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	Input      float64 `yaml:"input"`
	Output     float64 `yaml:"output"`
	CacheRead  float64 `yaml:"cache_read"`
	CacheWrite float64 `yaml:"cache_write"`
}

// IsZero reports whether no price is configured (the footer shows no cost).
func (p Price) IsZero() bool { return p == Price{} }

// Main returns the main model (llm.model with llm's endpoint, limits and price).
func (l LLM) Main() Model {
	return Model{Name: l.Model, Provider: l.Provider, BaseURL: l.BaseURL, APIKey: l.APIKey, ID: l.Model,
		ContextWindow: l.ContextWindow, MaxOutputTokens: l.MaxOutputTokens, Reasoning: l.Reasoning, Price: l.Price}
}

// Lookup finds a model by name among the main model and llm.models.
func (l LLM) Lookup(name string) (Model, bool) {
	if name == l.Model {
		return l.Main(), true
	}
	for _, m := range l.Models {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

// ModelNames lists the names `!model` accepts, the main model first.
func (l LLM) ModelNames() []string {
	names := []string{l.Model}
	for _, m := range l.Models {
		names = append(names, m.Name)
	}
	return names
}

// PlanFirst says whether the threads of repository repo plan a new request
// first: its approval, else agent.approval.
func (c *Config) PlanFirst(repo string) bool {
	mode := c.Agent.Approval
	for _, r := range c.Workspace.Repos {
		if r.Name == repo && r.Approval != "" {
			mode = r.Approval
		}
	}
	return mode == ApprovalPlan
}

// Agent configures every session (docs/agent.md).
type Agent struct {
	// BusyMode is how a plain message to a busy session is queued.
	BusyMode BusyMode `yaml:"busy_mode"`
	// Approval is none or plan: with plan every new request in a thread is
	// planned read-only first, and carried out when the requester or an
	// approver says Approve. A repository's approval overrides it.
	Approval ApprovalMode `yaml:"approval"`
	// SteerMode and FollowUpMode say how many queued messages one poll delivers.
	SteerMode    QueueMode  `yaml:"steer_mode"`
	FollowUpMode QueueMode  `yaml:"follow_up_mode"`
	Retry        Retry      `yaml:"retry"`
	Compaction   Compaction `yaml:"compaction"`
	// BashTimeout is the bash tool's default time limit.
	BashTimeout time.Duration `yaml:"bash_timeout"`
	// NotifyAfter is how long a run must take for its answer to mention the
	// person who asked, so that they hear of it; 0 mentions nobody.
	NotifyAfter time.Duration `yaml:"notify_after"`
	// SystemPrompt is appended to the built-in prompt; it does not replace it.
	SystemPrompt string   `yaml:"system_prompt"`
	SkillsDirs   []string `yaml:"skills_dirs"`
	PromptsDirs  []string `yaml:"prompts_dirs"`
	// BashEnv is extra environment for the bash tool (the bot's own environment
	// is never passed through).
	BashEnv map[string]string `yaml:"bash_env"`
}

// Retry configures automatic retries of transient LLM errors.
type Retry struct {
	Enabled    bool          `yaml:"enabled"`
	MaxRetries int           `yaml:"max_retries"`
	BaseDelay  time.Duration `yaml:"base_delay"`
	// MaxDelay caps the wait, including a server's Retry-After.
	MaxDelay time.Duration `yaml:"max_delay"`
}

// Compaction configures context compaction.
type Compaction struct {
	Enabled          bool `yaml:"enabled"`
	ReserveTokens    int  `yaml:"reserve_tokens"`
	KeepRecentTokens int  `yaml:"keep_recent_tokens"`
}

// Sandbox configures the isolation of everything the agent runs (docs/behaviour.md §8).
type Sandbox struct {
	// Mode is auto (the strongest isolation available; the bot refuses to
	// start without one), namespaces, or none (unsandboxed, explicit).
	Mode SandboxMode `yaml:"mode"`
	// Network lets the agent's commands reach the network.
	Network bool `yaml:"network"`
	// Memory caps each process's address space.
	Memory ByteSize `yaml:"memory"`
	// Processes caps the processes one command may run at once.
	Processes int `yaml:"processes"`
	// ReadOnlyPaths are extra host paths shown read-only (toolchains).
	ReadOnlyPaths []string `yaml:"read_only_paths"`
	// Disk caps what one thread's worktree, scratch folder and its
	// repository's cache folder take on disk together (allocated bytes).
	Disk ByteSize `yaml:"disk"`
	// Files caps the files and folders of one thread's worktree and scratch
	// folder together.
	Files int `yaml:"files"`
	// DiskReserve is the free space kept on data_dir's filesystem for the
	// bot (its database): below it the agents' writes stop; 0 keeps none.
	DiskReserve ByteSize `yaml:"disk_reserve"`
	// Caches gives each repository a build and package cache folder its
	// threads' commands share (GOCACHE, GOMODCACHE, npm, pip, XDG), counted
	// under the disk quota; false leaves every thread's caches in its own
	// scratch folder.
	Caches bool `yaml:"caches"`
}

// HTTP configures the operator's HTTP endpoints (/healthz, /readyz, /metrics)
// and the session pages (/s/<thread>, /) served on the same address.
type HTTP struct {
	// Listen is their address, such as 127.0.0.1:9090; empty turns them off.
	// It may equal slack.listen in http mode: one server then answers both.
	Listen string `yaml:"listen"`
	// PublicURL is where people reach Listen (through a proxy), such as
	// https://bot.example.com; with it, runs' footers and !status link the
	// thread's session page.
	PublicURL string `yaml:"public_url"`
	// SessionKey signs the links to session pages (HMAC-SHA256): whoever has
	// it can mint a link to any thread. Required with public_url.
	SessionKey string `yaml:"session_key"`
	// LinkTTL is how long a link stays valid; !link makes a fresh one.
	LinkTTL time.Duration `yaml:"link_ttl"`
	// AuthHeader names a header an authenticating proxy in front of Listen
	// sets (such as X-Forwarded-User): a request carrying it may see every
	// session. The proxy must remove it from its clients' requests.
	AuthHeader string `yaml:"auth_header"`
}

// DefaultLinkTTL is how long a session page link is valid by default.
const DefaultLinkTTL = 7 * 24 * time.Hour

// MCP configures the Model Context Protocol servers whose tools the agent gets.
type MCP struct {
	// RepoServers lets a repository's .threadsmith/mcp.json (or .mcp.json) add
	// stdio servers to its threads. They run sandboxed without network, with
	// only the environment the file states; off by default because a
	// repository's content is untrusted.
	RepoServers bool        `yaml:"repo_servers"`
	Servers     []MCPServer `yaml:"servers"`
}

// MCPServer is one MCP server: a program speaking MCP on stdio (run in the
// thread's sandbox), or a Streamable HTTP endpoint.
type MCPServer struct {
	// Name prefixes its tools: <name>__<tool>.
	Name string `yaml:"name"`
	// Disabled keeps the entry without using it.
	Disabled bool              `yaml:"disabled"`
	Command  string            `yaml:"command"`
	Args     []string          `yaml:"args"`
	Env      map[string]string `yaml:"env"`
	// Network lets a stdio server reach the network from its sandbox.
	Network bool              `yaml:"network"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	// Tools is an allow-list of the server's tool names; empty offers all.
	Tools []string `yaml:"tools"`
	// Repos and Channels limit the threads that get the server; empty: all.
	Repos    []string `yaml:"repos"`
	Channels []string `yaml:"channels"`
	// Timeout bounds one tool call. Default 2m.
	Timeout time.Duration `yaml:"timeout"`
}

// Workspace configures the per-thread checkouts.
type Workspace struct {
	// DefaultRepo is used when neither the message nor the channel names one.
	DefaultRepo string `yaml:"default_repo"`
	// BranchPrefix starts every session branch; pushes go only below it.
	BranchPrefix string `yaml:"branch_prefix"`
	Author       Author `yaml:"author"`
	// IdleTTL is how long an unused workspace is kept on disk.
	IdleTTL time.Duration `yaml:"idle_ttl"`
	// MaxDownloadBytes caps one file a user shares in a thread.
	MaxDownloadBytes int64  `yaml:"max_download_bytes"`
	Repos            []Repo `yaml:"repos"`
}

// Repo finds a configured repository by name.
func (w Workspace) Repo(name string) (Repo, bool) {
	for _, r := range w.Repos {
		if r.Name == name {
			return r, true
		}
	}
	return Repo{}, false
}

// RepoNames lists the configured repositories in file order.
func (w Workspace) RepoNames() []string {
	names := make([]string, len(w.Repos))
	for i, r := range w.Repos {
		names[i] = r.Name
	}
	return names
}

// Author is the git identity of the bot's commits.
type Author struct {
	Name  string `yaml:"name"`
	Email string `yaml:"email"`
}

// Repo is one repository sessions may work on.
type Repo struct {
	// Name is what users type (repo=<name>); letters, digits, '.', '_', '-'.
	Name string `yaml:"name"`
	// URL is a remote URL (https, ssh, git, scp-like), a local path or a file:// URL.
	URL           string `yaml:"url"`
	DefaultBranch string `yaml:"default_branch"`
	// Token authenticates https remotes; it is never written into the workspace.
	Token string `yaml:"token"`
	// SSHKeyFile is a private key for ssh remotes.
	SSHKeyFile string `yaml:"ssh_key_file"`
	// Forge is github, gitlab or gitea (also Forgejo); empty: guessed from
	// the remote's host. It picks compare links and pull request APIs.
	Forge string `yaml:"forge"`
	// APIURL is the forge's REST base for self-hosted forges (GitHub
	// Enterprise https://<host>/api/v3, GitLab https://<host>/api/v4, Gitea
	// https://<host>/api/v1); empty: the usual one for the host.
	APIURL string `yaml:"api_url"`
	// PullRequests is draft, ready or off: whether the first push of a
	// thread opens a pull (merge) request, and how. Needs a token.
	PullRequests PullRequestMode `yaml:"pull_requests"`
	// WebhookSecret verifies the forge's webhooks to http.listen's
	// /hooks/<name>: review comments on a thread's pull request reach the
	// thread as a `!review` by themselves.
	WebhookSecret string `yaml:"webhook_secret"`
	// Issues lets the repository's issues open threads (see RepoIssues).
	Issues *RepoIssues `yaml:"issues"`
	// Push is auto or approve: whether a run's commits are pushed when it
	// ends, or wait in the workspace for a Push (or !push) by the requester
	// or one of Approvers.
	Push PushMode `yaml:"push"`
	// Approvers are the chat user ids (Slack, Discord) who may approve the
	// thread's work besides its requester.
	Approvers []string `yaml:"approvers"`
	// Approval is none or plan (see Agent.Approval); empty: agent.approval.
	Approval ApprovalMode `yaml:"approval"`
}

// Slack configures the Slack adapter.
type Slack struct {
	Enabled       bool      `yaml:"enabled"`
	Mode          SlackMode `yaml:"mode"`
	BotToken      string    `yaml:"bot_token"`
	AppToken      string    `yaml:"app_token"`
	SigningSecret string    `yaml:"signing_secret"`
	// Listen is the HTTP address of the Events API endpoint (http mode).
	Listen string `yaml:"listen"`
	// APIURL replaces DefaultSlackAPIURL; use BaseURL.
	APIURL string `yaml:"api_url"`
	// Channels maps a channel id to the repositories its threads may work
	// on (see ChannelRepos).
	Channels map[string]ChannelRepos `yaml:"channels"`
	// AllowedUsers and AllowedChannels restrict who may use the bot; empty = all.
	AllowedUsers    []string `yaml:"allowed_users"`
	AllowedChannels []string `yaml:"allowed_channels"`
	// AllowDMs lets direct messages use the bot; unset, they may unless
	// AllowedChannels is set (see DMsAllowed).
	AllowDMs *bool     `yaml:"allow_dms"`
	Rate     SlackRate `yaml:"rate"`
	// AgentSessions shows the bot's work as Slack agent sessions (titled,
	// with Slack's stop button) instead of the assistant status; the app
	// must be declared as an agent (slack-app-manifest-agent.yaml).
	AgentSessions bool `yaml:"agent_sessions"`
	// Streaming is how a run's status message grows: "off" (the default)
	// edits it with chat.update; "auto" streams it with Slack's streaming
	// methods (chat.startStream, appendStream, stopStream) where the
	// workspace offers them, editing it where it does not.
	Streaming string `yaml:"streaming"`
}

// DMsAllowed says whether direct messages may use the bot: allow_dms when
// set, else only without a channel allowlist (a DM is no channel the list
// could name, so an allowlist would otherwise be bypassed by one).
func (s Slack) DMsAllowed() bool {
	if s.AllowDMs != nil {
		return *s.AllowDMs
	}
	return len(s.AllowedChannels) == 0
}

// BaseURL is the Web API base URL, always ending with "/".
func (s Slack) BaseURL() string {
	if s.APIURL == "" {
		return DefaultSlackAPIURL
	}
	return s.APIURL
}

// SlackRate is the bot's own budget for Slack's Web API (a Retry-After from
// Slack always wins).
type SlackRate struct {
	// PostPerSecond and PostBurst limit chat.postMessage per channel.
	PostPerSecond float64 `yaml:"post_per_second"`
	PostBurst     int     `yaml:"post_burst"`
	// UpdatePerMessagePerSecond limits chat.update of one message.
	UpdatePerMessagePerSecond float64 `yaml:"update_per_message_per_second"`
	// UpdatePerMinute limits chat.update across the workspace.
	UpdatePerMinute int `yaml:"update_per_minute"`
	// StatusPerMinute limits status updates (assistant.threads.setStatus,
	// agents.sessions.setStatus) across the workspace.
	StatusPerMinute int `yaml:"status_per_minute"`
	// AppendPerMinute limits chat.appendStream across the workspace: the
	// edits of streamed messages (slack.streaming).
	AppendPerMinute int `yaml:"append_per_minute"`
}

// Discord configures the Discord adapter.
type Discord struct {
	Enabled bool   `yaml:"enabled"`
	Token   string `yaml:"token"`
	// ApplicationID is optional: READY reports it.
	ApplicationID string `yaml:"application_id"`
	// GuildIDs register slash commands per guild (instant); empty = globally.
	GuildIDs []string `yaml:"guild_ids"`
	// APIURL replaces DefaultDiscordAPIURL for REST and the gateway lookup; use BaseURL.
	APIURL string `yaml:"api_url"`
	// Channels maps a channel id to the repositories its threads may work
	// on (see ChannelRepos).
	Channels     map[string]ChannelRepos `yaml:"channels"`
	AllowedRoles []string                `yaml:"allowed_roles"`
	AllowedUsers []string                `yaml:"allowed_users"`
	// AllowDMs lets direct messages use the bot; unset, they may (see
	// DMsAllowed).
	AllowDMs *bool       `yaml:"allow_dms"`
	Rate     DiscordRate `yaml:"rate"`
	// ShardID and ShardCount split the bot's guilds over several gateway
	// connections, one per replica: Discord sends a guild's events (and its
	// slash commands) to shard (guild_id >> 22) % shard_count, DMs to shard 0.
	// ShardCount 0 or 1 is one connection for everything.
	ShardID    int `yaml:"shard_id"`
	ShardCount int `yaml:"shard_count"`
}

// DMsAllowed says whether direct messages may use the bot: allow_dms, true
// when unset (Discord has no channel allowlist a DM could bypass).
func (d Discord) DMsAllowed() bool { return d.AllowDMs == nil || *d.AllowDMs }

// BaseURL is the REST base URL (without api/v9), always ending with "/".
func (d Discord) BaseURL() string {
	if d.APIURL == "" {
		return DefaultDiscordAPIURL
	}
	if !strings.HasSuffix(d.APIURL, "/") {
		return d.APIURL + "/"
	}
	return d.APIURL
}

// DiscordRate is the bot's own budget for Discord's REST API (a Retry-After
// from Discord always wins).
type DiscordRate struct {
	// EditsPer5s limits message edits per channel per 5 seconds.
	EditsPer5s int `yaml:"edits_per_5s"`
	// RequestsPerSecond limits all REST requests.
	RequestsPerSecond int `yaml:"requests_per_second"`
}

// Default returns the configuration of an empty file. It does not validate on
// its own: it has no API key and Slack (enabled by default) has no tokens.
func Default() Config {
	return Config{
		DataDir:           "./data",
		Storage:           defaultStorage(),
		ShutdownGrace:     30 * time.Second,
		RunTimeout:        30 * time.Minute,
		IdleEvict:         10 * time.Minute,
		MaxConcurrentRuns: 8,
		Log:               Log{Level: LogInfo, Format: LogAuto},
		HTTP:              HTTP{LinkTTL: DefaultLinkTTL},
		LLM: LLM{
			Provider:        ProviderOpenAI,
			BaseURL:         DefaultOpenAIBaseURL,
			Model:           "gpt-4.1",
			ContextWindow:   128000,
			MaxOutputTokens: 8192,
		},
		Agent: Agent{
			BusyMode:     BusyFollowUp,
			Approval:     ApprovalNone,
			SteerMode:    OneAtATime,
			FollowUpMode: OneAtATime,
			Retry:        Retry{Enabled: true, MaxRetries: 3, BaseDelay: 2 * time.Second, MaxDelay: 60 * time.Second},
			Compaction:   Compaction{Enabled: true, ReserveTokens: 16384, KeepRecentTokens: 20000},
			BashTimeout:  10 * time.Minute,
			NotifyAfter:  time.Minute,
		},
		Workspace: Workspace{
			BranchPrefix:     "bot/",
			Author:           Author{Name: "threadsmith", Email: "threadsmith@localhost"},
			IdleTTL:          168 * time.Hour,
			MaxDownloadBytes: 20 << 20,
		},
		Sandbox: Sandbox{Mode: SandboxAuto, Memory: 2 << 30, Processes: 512, Disk: 5 << 30, Files: 200_000, DiskReserve: 256 << 20, Caches: true},
		Slack: Slack{
			Enabled:   true,
			Mode:      SlackSocket,
			Listen:    ":3000",
			Streaming: "off",
			Rate:      SlackRate{PostPerSecond: 1, PostBurst: 5, UpdatePerMessagePerSecond: 1, UpdatePerMinute: 50, StatusPerMinute: 20, AppendPerMinute: 100},
		},
		Discord: Discord{
			Rate: DiscordRate{EditsPer5s: 5, RequestsPerSecond: 50},
		},
	}
}

// defaultBranch is a repo's default_branch when the file leaves it out.
const defaultBranch = "main"

// Platforms lists the enabled chat platforms, Slack first.
func (c Config) Platforms() []string {
	var ps []string
	if c.Slack.Enabled {
		ps = append(ps, PlatformSlack)
	}
	if c.Discord.Enabled {
		ps = append(ps, PlatformDiscord)
	}
	return ps
}

// LogValue logs the configuration with its secrets redacted, so that logging a
// Config by accident cannot leak a token.
func (c Config) LogValue() slog.Value {
	type plain Config // drops the LogValue method
	return slog.AnyValue(plain(c.Redacted()))
}
