package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/ops"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/schedule"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
)

var errHelp = errors.New("help requested")

// errNoPlatform stops a bot (and fails -check) with neither Slack nor
// Discord enabled.
var errNoPlatform = errors.New("no platform is enabled: set slack.enabled or discord.enabled, or run with -console")

// configError marks errors that are the operator's configuration.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// Main is the program: flags, config, and every component wired together. An
// end-to-end test builds one, sets Config and extra adapters, and calls Run and
// Close.
type Main struct {
	ConfigPath string
	Check      bool
	Console    bool
	// ConsoleRepo picks a configured repository for -console; "" uses the
	// current directory's repository.
	ConsoleRepo string

	// Config is loaded from ConfigPath by Run unless set (tests set it).
	Config *config.Config
	// Env resolves ${VAR} in the config (default os.LookupEnv).
	Env func(string) (string, bool)
	// Adapters are extra platforms (tests use an in-process adapter).
	Adapters []chat.Adapter
	// Stdin, Stdout and Stderr are the console's and the logs' streams.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Logger overrides the logger built from the config.
	Logger *slog.Logger
	// Now is the bridge's clock (default time.Now; tests move it).
	Now func() time.Time
	// ScheduleClock is the schedules' clock (default the real one; tests
	// move it).
	ScheduleClock schedule.Clock
	// Sleep is the sessions' wait between a model request's retries
	// (default: a real timer; tests pass the waits at once).
	Sleep func(ctx context.Context, d time.Duration) error
	// ProbeSleep is the wait between two asks of a model that could not be
	// reached (default: a real timer; tests move a clock).
	ProbeSleep func(ctx context.Context, d time.Duration) error
	// PushRetry is the first wait before a push the remote did not answer
	// is tried again (default 30s; tests shorten it).
	PushRetry time.Duration
	// Version prints the version and exits (-version).
	Version bool
	// Backup is -backup's file: copy the database there and exit.
	Backup string
	// Continue makes -console resume the latest console session of the
	// repository instead of starting a new one.
	Continue bool

	DB         storage.Store
	Workspaces *workspace.Manager
	Bridge     *bridge.Bridge
	Outboxes   map[string]*outbox.Outbox
	opsState

	log      *slog.Logger // the logger Run built, for Close
	cancel   context.CancelFunc
	done     chan struct{}
	swept    chan struct{} // closed when the retention sweeper stopped
	mu       sync.Mutex
	err      error
	closeErr error
	closed   bool
}

// NewMain returns a Main with the program's defaults.
func NewMain() *Main {
	return &Main{ConfigPath: "./config.yaml", Env: os.LookupEnv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}

// ParseFlags reads the command line.
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("threadsmith", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&m.ConfigPath, "config", m.ConfigPath, "path of the YAML config file")
	fs.BoolVar(&m.Check, "check", false, "validate the config, reach Slack, Discord, the LLM endpoint and the git remotes, then exit 0 (all good) or 1")
	fs.BoolVar(&m.Console, "console", false, "run one local thread in this terminal instead of Slack and Discord")
	fs.StringVar(&m.ConsoleRepo, "repo", "", "with -console: the configured repository to work on (default: the current directory)")
	fs.BoolVar(&m.Continue, "continue", false, "with -console: continue the latest console session of the repository (default: a new session, on a new branch)")
	fs.BoolVar(&m.Version, "version", false, "print the version and exit")
	fs.StringVar(&m.Backup, "backup", "", "copy the SQLite database, while the bot runs or not, to this `file` (which must not exist), then exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: threadsmith [-config config.yaml] [-check | -console [-repo name] [-continue] | -backup file | -version]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if m.Check && m.Console {
		return errors.New("-check and -console cannot be combined")
	}
	if m.Backup != "" && (m.Check || m.Console) {
		return errors.New("-backup cannot be combined with -check or -console")
	}
	if m.Continue && !m.Console {
		return errors.New("-continue goes with -console")
	}
	return nil
}

// loadConfig loads and validates the config (console mode fills in what a
// first-time user has not configured).
func (m *Main) loadConfig() (*config.Config, error) {
	if m.Config != nil {
		if err := m.Config.Validate(); err != nil {
			return nil, configError{err}
		}
		return m.Config, nil
	}
	if m.Console {
		c, err := consoleConfig(m.ConfigPath, m.ConsoleRepo, m.Env)
		if err != nil {
			return nil, configError{err}
		}
		return c, nil
	}
	c, err := config.Load(m.ConfigPath, m.Env)
	if err != nil {
		return nil, configError{fmt.Errorf("invalid config %s:\n%w", m.ConfigPath, err)}
	}
	return &c, nil
}

// Run starts the bot and returns once it is up; it runs until ctx ends or
// Close is called. Done is closed when it stops by itself (an adapter failed
// for good, or the console's input ended).
func (m *Main) Run(ctx context.Context) (err error) {
	cfg, err := m.loadConfig()
	if err != nil {
		return err
	}
	m.Config = cfg
	log := m.Logger
	if log == nil {
		log = m.logger(cfg)
	}
	m.log = log
	// The data_dir is this bot's before it says anything: a second bot on
	// it stops with the lock's error alone.
	if err := m.lockDataDir(cfg); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			m.stopOps()
		}
	}()
	bi := buildInfo()
	log.Info("starting threadsmith", "version", bi.Version, "revision", bi.Revision, "config", cfg.Redacted())
	hardenProcess(cfg, log)
	keepHeapFloor(log)
	m.Metrics = ops.NewMetrics(bi)
	sb, err := m.openSandbox(cfg)
	if err != nil {
		return err
	}
	log.Info("sandbox", "mode", sb.String())
	if limits, unpriced := budgetNotes(cfg); limits != "" {
		log.Info(limits)
		for _, u := range unpriced {
			log.Warn(u)
		}
	}

	db, err := m.openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	m.DB = db
	m.startMetrics(db)
	ws, err := workspace.New(workspaceConfig(cfg, log))
	if err != nil {
		db.Close()
		return configError{err}
	}
	m.Workspaces = ws
	model, err := newModel(cfg)
	if err != nil {
		m.closeStores()
		return configError{err}
	}
	m.Metrics.KnownModels(modelNames(cfg)...)

	if err := m.listenOps(cfg); err != nil {
		m.closeStores()
		return err
	}
	adapters, err := m.adapters(cfg, log)
	if err != nil {
		m.closeStores()
		return configError{err}
	}
	m.Outboxes = map[string]*outbox.Outbox{}
	var platforms []bridge.Platform
	for _, a := range adapters {
		ob := outbox.New(a, outbox.Config{Limits: limitsFor(cfg, a.Platform()), Logger: log.With("component", "outbox", "platform", a.Platform())})
		m.Outboxes[a.Platform()] = ob
		platforms = append(platforms, platformFor(cfg, a, ob))
	}
	m.pages = sessionPages(cfg, db, ws, log)
	scheds, err := schedules(cfg, m.Console)
	if err != nil {
		m.closeStores()
		return err
	}
	b, err := bridge.New(bridge.Config{
		Store:             db,
		Workspaces:        ws,
		Model:             m.instrument(redactErrors(model, secrets(cfg))),
		Agent:             agentConfig(cfg),
		Platforms:         platforms,
		DefaultRepo:       cfg.Workspace.DefaultRepo,
		MaxConcurrentRuns: cfg.MaxConcurrentRuns,
		RunTimeout:        cfg.RunTimeout,
		IdleEvict:         cfg.IdleEvict,
		MaxDownloadBytes:  cfg.Workspace.MaxDownloadBytes,
		Secrets:           secrets(cfg),
		Sandbox:           sb,
		Metrics:           m.Metrics,
		MCPServers:        mcpServers(cfg),
		PullRequests:      pullRequests(cfg, log),
		Issues:            issueSources(cfg, log),
		Approvals:         approvals(cfg),
		MCPRepoServers:    cfg.MCP.RepoServers,
		PageLink:          m.pageLink,
		PagesOff:          m.pagesOff(),
		Lease:             leaseConfig(cfg),
		Budget:            bridge.Budget{PerUserDaily: cfg.Budget.PerUserDaily, PerThread: cfg.Budget.PerThread},
		Schedules:         scheds,
		ScheduleClock:     m.ScheduleClock,
		Logger:            log,
		Now:               m.Now,
		Sleep:             m.Sleep,
		ProbeSleep:        m.ProbeSleep,
		PushRetry:         m.PushRetry,
	})
	if err != nil {
		m.closeStores()
		return err
	}
	m.Bridge = b
	rctx, cancel := context.WithCancel(ctx)
	m.cancel = cancel
	m.done = make(chan struct{})
	m.serveOps(log, adapters)
	m.startRetention(rctx, cfg, db, ws, log)
	m.running.Store(true)
	go func() {
		defer close(m.done)
		err := b.Run(rctx)
		m.mu.Lock()
		m.err = err
		m.mu.Unlock()
		if err != nil {
			log.Error("stopped", "err", err)
		}
	}()
	return nil
}

// Done is closed when the bot stops by itself.
func (m *Main) Done() <-chan struct{} { return m.done }

// Err is why the bot stopped by itself, nil after a requested shutdown.
func (m *Main) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Close shuts down gracefully within the configured grace period: no new
// input, active runs may finish (then are stopped and reported), state is
// flushed.
func (m *Main) Close() error { return m.CloseBecause("requested") }

// CloseBecause is Close, logging why the bot shuts down (a signal, say) and,
// once done, how long the shutdown took.
func (m *Main) CloseBecause(why string) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return m.closeErr
	}
	m.closed = true
	m.mu.Unlock()
	start := time.Now()
	log := m.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("shutting down", "reason", why)
	defer func() {
		if m.closeErr != nil {
			log.Error("shut down", "reason", why, "took", time.Since(start).Round(time.Millisecond), "err", m.closeErr)
		} else {
			log.Info("shut down", "reason", why, "took", time.Since(start).Round(time.Millisecond))
		}
	}()
	m.draining.Store(true)
	grace := 30 * time.Second
	if m.Config != nil && m.Config.ShutdownGrace > 0 {
		grace = m.Config.ShutdownGrace
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var errs []error
	if m.cancel != nil {
		m.cancel() // adapters stop taking input
		<-m.done
	}
	if m.swept != nil {
		<-m.swept // it releases the retention lock before the store closes
	}
	if m.Bridge != nil {
		errs = append(errs, m.Bridge.Shutdown(ctx))
	}
	for _, ob := range m.Outboxes {
		// Output a platform's rate limit still held when the grace ended
		// is dropped here: the bridge has logged it, and the answers among
		// it were stored and are posted at the next start. docs/behaviour.md §6 wants
		// a shutdown within the grace to exit 0, so this is no error.
		if err := ob.Close(ctx); err != nil && !(m.Bridge != nil && errors.Is(err, context.DeadlineExceeded)) {
			errs = append(errs, err)
		}
	}
	if m.console != nil {
		m.console.Finish() // everything is printed: the terminal gets its last newline
	}
	errs = append(errs, m.closeStores())
	errs = append(errs, m.stopOps())
	m.closeErr = errors.Join(errs...)
	return m.closeErr
}

func (m *Main) closeStores() error {
	var errs []error
	if m.Workspaces != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, m.Workspaces.Close(ctx))
		cancel()
	}
	if m.DB != nil {
		errs = append(errs, m.DB.Close())
	}
	return errors.Join(errs...)
}

// adapters builds the enabled platforms' adapters.
func (m *Main) adapters(cfg *config.Config, log *slog.Logger) ([]chat.Adapter, error) {
	var out []chat.Adapter
	if m.Console {
		out = append(out, m.newConsole(cfg))
		return append(out, m.Adapters...), nil
	}
	platformAdapters, err := buildPlatformAdapters(cfg, log, m.platformHooks())
	if err != nil {
		return nil, err
	}
	out = append(out, platformAdapters...)
	out = append(out, m.Adapters...)
	if len(out) == 0 {
		return nil, errNoPlatform
	}
	return out, nil
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.Level.Slog()}
	isTTY := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil {
			isTTY = st.Mode()&os.ModeCharDevice != 0
		}
	}
	if c.Format.JSON(isTTY) {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func workspaceConfig(cfg *config.Config, log *slog.Logger) workspace.Config {
	wc := workspace.Config{
		DataDir:      cfg.DataDir,
		BranchPrefix: cfg.Workspace.BranchPrefix,
		Author:       workspace.Identity{Name: cfg.Workspace.Author.Name, Email: cfg.Workspace.Author.Email},
		IdleTTL:      cfg.Workspace.IdleTTL,
		NoCaches:     !cfg.Sandbox.Caches,
		Logger:       log.With("component", "workspace"),
	}
	for _, r := range cfg.Workspace.Repos {
		wc.Repos = append(wc.Repos, workspace.Repo{Name: r.Name, URL: r.URL, DefaultBranch: r.DefaultBranch, Token: r.Token, SSHKeyFile: r.SSHKeyFile})
	}
	return wc
}

func agentConfig(cfg *config.Config) bridge.AgentConfig {
	info := func(m config.Model) bridge.ModelInfo {
		return bridge.ModelInfo{Name: m.Name, Provider: string(m.Provider), ContextWindow: m.ContextWindow, MaxOutputTokens: m.MaxOutputTokens, Price: bridge.Price(modelPrice(m))}
	}
	ac := bridge.AgentConfig{
		Model:        info(cfg.LLM.Main()),
		Instructions: cfg.Agent.SystemPrompt,
		BusyMode:     agent.BehaviorFollowUp,
		SteerMode:    queueMode(cfg.Agent.SteerMode),
		FollowUpMode: queueMode(cfg.Agent.FollowUpMode),
		Retry: agent.RetrySettings{Enabled: cfg.Agent.Retry.Enabled, MaxRetries: cfg.Agent.Retry.MaxRetries,
			BaseDelay: cfg.Agent.Retry.BaseDelay, MaxDelay: cfg.Agent.Retry.MaxDelay},
		Compaction: compaction.Settings{Enabled: cfg.Agent.Compaction.Enabled, ReserveTokens: cfg.Agent.Compaction.ReserveTokens,
			KeepRecentTokens: cfg.Agent.Compaction.KeepRecentTokens},
		BashTimeout: cfg.Agent.BashTimeout,
		NotifyAfter: cfg.Agent.NotifyAfter,
		BashEnv:     cfg.Agent.BashEnv,
		SkillsDirs:  cfg.Agent.SkillsDirs,
		PromptsDirs: cfg.Agent.PromptsDirs,
		GitName:     cfg.Workspace.Author.Name,
		GitEmail:    cfg.Workspace.Author.Email,
		DiskQuota: tools.Quota{Bytes: int64(cfg.Sandbox.Disk), Files: int64(cfg.Sandbox.Files),
			Floor: &diskuse.Floor{Path: cfg.DataDir, Reserve: int64(cfg.Sandbox.DiskReserve)}},
	}
	if cfg.Agent.BusyMode == config.BusySteer {
		ac.BusyMode = agent.BehaviorSteer
	}
	for _, mm := range cfg.LLM.Models {
		ac.Models = append(ac.Models, info(mm))
	}
	return ac
}

func queueMode(q config.QueueMode) agent.QueueMode {
	if q == config.AllAtOnce {
		return agent.AllAtOnce
	}
	return agent.OneAtATime
}

// secrets are the strings tool output must never show.
// openSandbox sets up the sandbox of the agent's commands. An unusable
// sandbox.mode is a configuration error: the operator must either fix the
// machine or say sandbox.mode: none.
func (m *Main) openSandbox(cfg *config.Config) (*sandbox.Sandbox, error) {
	sc := sandboxConfig(cfg, m.ConfigPath)
	if m.Metrics != nil {
		sc.Metrics = m.Metrics // sandboxes that fail to start
	}
	sb, err := sandbox.New(sc)
	if err != nil {
		return nil, configError{fmt.Errorf("sandbox.mode: %s: %w; set sandbox.mode: none to run the agent's commands unsandboxed", cfg.Sandbox.Mode, err)}
	}
	return sb, nil
}

// sandboxConfig is the sandbox of cfg. What the agent must never see even
// where a system folder is shown (a config file under /etc, say): the
// config file, the data directory, the repositories' ssh keys, the
// database's client key and password file, and the bot's home.
func sandboxConfig(cfg *config.Config, configPath string) sandbox.Config {
	var hide []string
	paths := append([]string{configPath, cfg.DataDir}, dsnSecretFiles(cfg.Storage.DSN)...)
	for _, r := range cfg.Workspace.Repos {
		paths = append(paths, r.SSHKeyFile)
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			hide = append(hide, abs)
		}
	}
	if home, err := os.UserHomeDir(); err == nil && home != "/" {
		hide = append(hide, home)
	}
	return sandbox.Config{
		Mode:      sandbox.Mode(cfg.Sandbox.Mode),
		Network:   cfg.Sandbox.Network,
		Memory:    int64(cfg.Sandbox.Memory),
		Processes: cfg.Sandbox.Processes,
		ReadOnly:  cfg.Sandbox.ReadOnlyPaths,
		Hide:      hide,
	}
}

func secrets(cfg *config.Config) []string {
	s := []string{cfg.LLM.APIKey, cfg.Slack.BotToken, cfg.Slack.AppToken, cfg.Slack.SigningSecret, cfg.Discord.Token, cfg.HTTP.SessionKey,
		cfg.Storage.DSN, config.DSNPassword(cfg.Storage.DSN)}
	for _, r := range cfg.Workspace.Repos {
		s = append(s, r.Token, r.WebhookSecret)
	}
	s = append(s, urlSecrets(cfg.LLM.BaseURL)...) // a proxy's key in base_url?key=
	for _, m := range cfg.LLM.Models {
		s = append(s, m.APIKey) // an endpoint's own key, as secret as llm.api_key
		s = append(s, urlSecrets(m.BaseURL)...)
	}
	s = append(s, mcpSecrets(cfg)...)
	var out []string
	for _, x := range s {
		if len(x) >= 6 {
			out = append(out, x)
		}
	}
	return out
}

// redactErrors hides the secrets in a model call's error: an endpoint (a
// proxy) may quote the URL it was asked at, base_url's ?key= and all, and
// Go's own transport errors quote the URL's query. The error reaches the
// thread, the retry notice, the log and the session's storage.
func redactErrors(model llm.Model, secrets []string) llm.Model {
	return redactingModel{model, secrets}
}

type redactingModel struct {
	next    llm.Model
	secrets []string
}

func (r redactingModel) Stream(ctx context.Context, req llm.Request, fn llm.StreamFunc) (llm.Message, error) {
	msg, err := r.next.Stream(ctx, req, fn)
	msg.ErrorMessage = tools.RedactString(msg.ErrorMessage, r.secrets)
	if e := msg.ErrorInfo; e != nil {
		e.Message = tools.RedactString(e.Message, r.secrets) // err's too when it is the same
	}
	if err != nil {
		var e *llm.Error
		if errors.As(err, &e) {
			e.Message = tools.RedactString(e.Message, r.secrets)
		}
		if s := tools.RedactString(err.Error(), r.secrets); s != err.Error() {
			err = redactedError{s, err}
		}
	}
	return msg, err
}

// redactedError is an error's text with the secrets hidden; errors.Is and
// errors.As still see what it wraps.
type redactedError struct {
	text string
	err  error
}

func (e redactedError) Error() string { return e.text }
func (e redactedError) Unwrap() error { return e.err }

func limitsFor(cfg *config.Config, platform string) outbox.Limits {
	switch platform {
	case config.PlatformSlack:
		r := cfg.Slack.Rate
		return outbox.Limits{
			PostPerChannel:     outbox.PerSecond(r.PostPerSecond, r.PostBurst),
			EditPerMessage:     outbox.PerSecond(r.UpdatePerMessagePerSecond, 1),
			EditPerWorkspace:   outbox.PerWindow(r.UpdatePerMinute, time.Minute, 5),
			Status:             outbox.PerWindow(r.StatusPerMinute, time.Minute, 5),
			StreamPerWorkspace: outbox.PerWindow(r.AppendPerMinute, time.Minute, 5),
		}
	case config.PlatformDiscord:
		r := cfg.Discord.Rate
		l := outbox.DiscordLimits()
		l.EditPerChannel = outbox.PerWindow(r.EditsPer5s, 5*time.Second, 2)
		l.Requests = outbox.PerWindow(r.RequestsPerSecond, time.Second, 10)
		return l
	}
	// Local adapters (the console, tests) have no budgets.
	return outbox.Limits{}
}

func platformFor(cfg *config.Config, a chat.Adapter, ob *outbox.Outbox) bridge.Platform {
	p := bridge.Platform{Adapter: a, Outbox: ob}
	switch a.Platform() {
	case config.PlatformSlack:
		p.Channels, p.AllowedUsers, p.AllowedChannels = channelRepos(cfg.Slack.Channels), cfg.Slack.AllowedUsers, cfg.Slack.AllowedChannels
		p.RefuseDMs = !cfg.Slack.DMsAllowed()
		// Socket Mode spreads an app's events over its connections, and
		// HTTP events go through the operator's balancer.
		p.SpreadsThreads = true
	case config.PlatformDiscord:
		p.Channels, p.AllowedUsers, p.AllowedRoles = channelRepos(cfg.Discord.Channels), cfg.Discord.AllowedUsers, cfg.Discord.AllowedRoles
		p.RefuseDMs = !cfg.Discord.DMsAllowed()
	}
	return p
}

// channelRepos is a platform's channel mapping as the bridge takes it.
func channelRepos(m map[string]config.ChannelRepos) map[string][]string {
	out := make(map[string][]string, len(m))
	for ch, repos := range m {
		for _, r := range repos {
			if r == config.AnyRepo {
				r = bridge.AnyRepo
			}
			out[ch] = append(out[ch], r)
		}
	}
	return out
}

// leaseConfig makes the bot a replica when its database is shared
// (PostgreSQL): it owns the threads whose lease it holds. With SQLite it is
// the only bot on its data_dir and takes no leases.
func leaseConfig(cfg *config.Config) bridge.LeaseConfig {
	if cfg.Storage.Driver != config.StoragePostgres {
		return bridge.LeaseConfig{}
	}
	return bridge.LeaseConfig{Owner: bridge.NewOwner(), TTL: cfg.Storage.Lease.TTL, Renew: cfg.Storage.Lease.Renew}
}
