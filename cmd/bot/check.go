package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// RunCheck validates the config and tries to reach the services it names,
// printing one line per problem (or "ok"). It reports whether all is well.
func (m *Main) RunCheck(ctx context.Context, w io.Writer) bool {
	cfg, err := m.loadConfig()
	if err != nil {
		if errs := config.AsErrors(err); len(errs) > 0 {
			for _, e := range errs {
				fmt.Fprintln(w, e)
			}
		} else {
			fmt.Fprintln(w, err)
		}
		return false
	}
	// What the services answer may quote a secret (an unreachable
	// base_url's ?key=, a DSN's password): every line goes to the
	// operator's terminal or a CI log, redacted.
	w = redactingWriter{w, secrets(cfg)}
	ok := true
	fail := func(format string, args ...any) {
		ok = false
		fmt.Fprintf(w, format+"\n", args...)
	}
	sb, err := m.openSandbox(cfg)
	if err != nil {
		fail("%v", err)
	} else {
		fmt.Fprintf(w, "sandbox: %s\n", sb)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if sb != nil {
		for _, p := range checkMCP(ctx, cfg, sb, w) {
			fail("%s", p)
		}
	}

	if msg, err := checkStorage(ctx, cfg, func(db storage.Store) string { return m.retentionLine(ctx, cfg, db) }); err != nil {
		fail("%v", err)
	} else {
		fmt.Fprintln(w, msg)
	}
	for _, p := range checkModels(ctx, cfg) {
		fail("%s", p)
	}
	if limits, unpriced := budgetNotes(cfg); limits != "" {
		// A model without a price is told, not failed: the bot runs, and
		// the budgets count its replies as nothing.
		fmt.Fprintln(w, limits)
		for _, u := range unpriced {
			fmt.Fprintln(w, u)
		}
	}
	for _, p := range checkRemotes(ctx, cfg) {
		fail("%s", p)
	}
	if !cfg.Slack.Enabled && !cfg.Discord.Enabled && len(m.Adapters) == 0 {
		fail("%v", errNoPlatform) // the bot would not start
	}
	for _, p := range checkPlatforms(ctx, cfg) {
		fail("%s", p)
	}
	if ok {
		fmt.Fprintln(w, "ok")
	}
	return ok
}

// checkRemotes lists every configured repository's remote branches, as the
// bot's fetches and pushes reach them (the git CLI, its transport and
// credentials), and checks that the default branch exists.
func checkRemotes(ctx context.Context, cfg *config.Config) []string {
	var problems []string
	for _, r := range workspaceConfig(cfg, slog.New(slog.DiscardHandler)).Repos {
		key := "workspace.repos[" + r.Name + "]"
		branches, err := workspace.RemoteBranches(ctx, r, 0)
		if err != nil {
			// One line: the bot's words and git's first.
			text, _, _ := strings.Cut(err.Error(), "\n")
			problems = append(problems, fmt.Sprintf("%s.url: %s", key, redact(text, r.Token)))
			continue
		}
		if want := cmp.Or(r.DefaultBranch, "main"); !slices.Contains(branches, want) {
			problems = append(problems, fmt.Sprintf("%s.default_branch: the remote has no branch %q", key, want))
		}
	}
	return problems
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// checkPlatforms tries the enabled platforms' credentials.
func checkPlatforms(ctx context.Context, cfg *config.Config) []string {
	var problems []string
	client := &http.Client{Timeout: 15 * time.Second}
	if cfg.Slack.Enabled {
		if err := slackCall(ctx, client, cfg.Slack.BaseURL()+"auth.test", cfg.Slack.BotToken); err != nil {
			problems = append(problems, "slack.bot_token: "+err.Error())
		}
		if cfg.Slack.Mode == config.SlackSocket {
			if err := slackCall(ctx, client, cfg.Slack.BaseURL()+"apps.connections.open", cfg.Slack.AppToken); err != nil {
				problems = append(problems, "slack.app_token: "+err.Error())
			}
		}
	}
	if cfg.Discord.Enabled {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Discord.BaseURL()+"api/v9/users/@me", nil)
		tok := cfg.Discord.Token
		if !strings.HasPrefix(tok, "Bot ") {
			tok = "Bot " + tok
		}
		req.Header.Set("Authorization", tok)
		resp, err := client.Do(req)
		switch {
		case err != nil:
			problems = append(problems, "discord.api_url: cannot reach Discord: "+redact(err.Error(), cfg.Discord.Token))
		default:
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				problems = append(problems, "discord.token: Discord refused the token (401)")
			} else if resp.StatusCode >= 300 {
				problems = append(problems, fmt.Sprintf("discord: unexpected answer %s", resp.Status))
			}
		}
	}
	return problems
}

// slackCall makes one Slack Web API call and reports Slack's error, if any.
func slackCall(ctx context.Context, client *http.Client, endpoint, token string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(""))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach Slack: %s", redact(err.Error(), token))
	}
	defer resp.Body.Close()
	var body struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return fmt.Errorf("unexpected answer from Slack (%s)", resp.Status)
	}
	if !body.OK {
		return fmt.Errorf("rejected by Slack: %q", body.Error)
	}
	return nil
}

// redactingWriter writes each write with the secrets in it redacted; each
// of RunCheck's lines is one write.
type redactingWriter struct {
	w       io.Writer
	secrets []string
}

func (r redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, tools.RedactString(string(p), r.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}
