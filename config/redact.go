package config

import (
	"net/url"
	"strings"
)

// redactedValue replaces a secret in Redacted; an empty secret stays empty so
// the log still shows that it is unset.
const redactedValue = "***"

// Redacted returns a copy of c for logging the effective configuration: API
// keys, tokens, signing secrets, bash_env values and credentials inside URLs
// are replaced by "***". Lists and maps that hold no secret are shared with c.
func (c Config) Redacted() Config {
	r := c
	r.LLM.APIKey = redact(c.LLM.APIKey)
	r.LLM.BaseURL = redactLink(c.LLM.BaseURL)
	if c.LLM.Models != nil {
		r.LLM.Models = make([]Model, len(c.LLM.Models))
		for i, m := range c.LLM.Models {
			m.APIKey = redact(m.APIKey)
			m.BaseURL = redactLink(m.BaseURL)
			r.LLM.Models[i] = m
		}
	}
	r.Agent.BashEnv = redactValues(c.Agent.BashEnv)
	if c.Workspace.Repos != nil {
		r.Workspace.Repos = make([]Repo, len(c.Workspace.Repos))
		for i, repo := range c.Workspace.Repos {
			repo.Token = redact(repo.Token)
			repo.WebhookSecret = redact(repo.WebhookSecret)
			repo.URL = redactLink(repo.URL)
			r.Workspace.Repos[i] = repo
		}
	}
	if c.MCP.Servers != nil {
		r.MCP.Servers = make([]MCPServer, len(c.MCP.Servers))
		for i, srv := range c.MCP.Servers {
			srv.Env = redactValues(srv.Env)
			srv.Headers = redactValues(srv.Headers)
			srv.URL = redactLink(srv.URL)
			r.MCP.Servers[i] = srv
		}
	}
	r.HTTP.SessionKey = redact(c.HTTP.SessionKey)
	r.Slack.BotToken = redact(c.Slack.BotToken)
	r.Slack.AppToken = redact(c.Slack.AppToken)
	r.Slack.SigningSecret = redact(c.Slack.SigningSecret)
	r.Slack.APIURL = redactLink(c.Slack.APIURL)
	r.Discord.Token = redact(c.Discord.Token)
	r.Discord.APIURL = redactLink(c.Discord.APIURL)
	r.Storage.DSN = redactDSN(c.Storage.DSN)
	return r
}

func redactValues(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = redact(v)
	}
	return out
}

func redact(s string) string {
	if s == "" {
		return ""
	}
	return redactedValue
}

// redactLink hides what a URL may carry a credential in: its user
// information and its query's values (an MCP server's or a proxy's key,
// https://llm-proxy.example.com/v1?key=…).
func redactLink(s string) string { return redactQuery(redactURL(s)) }

// redactQuery hides the values of a URL's query, and a bare word in it
// (?TOKEN): only the names of name=value pairs (separated by '&' or ';')
// are kept. A URL with a query
// that does not parse is hidden whole.
func redactQuery(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil && strings.Contains(s, "?"):
		return redactedValue
	case err != nil || u.RawQuery == "":
		return s
	}
	// Pairs end at '&' or ';', as urlSecrets reads them: split at '&'
	// alone, "?TOKEN;v=2" kept "TOKEN;v" as a name.
	var q strings.Builder
	for rest := u.RawQuery; ; {
		p, sep := rest, ""
		if i := strings.IndexAny(rest, "&;"); i >= 0 {
			p, sep, rest = rest[:i], rest[i:i+1], rest[i+1:]
		}
		if name, _, ok := strings.Cut(p, "="); ok {
			q.WriteString(name + "=" + redactedValue)
		} else if p != "" {
			q.WriteString(redactedValue)
		}
		if sep == "" {
			break
		}
		q.WriteString(sep)
	}
	u.RawQuery = q.String()
	return u.String()
}

// redactURL hides the user information of a URL (Validate refuses it in repo
// URLs, but Redacted must be safe on any Config).
func redactURL(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s // a local path or scp-like git@host:path: its user is no secret
	}
	u, err := url.Parse(s)
	if err != nil {
		return redactedValue // unparsable and possibly holding a credential
	}
	if u.User == nil {
		return s
	}
	u.User = url.User(redactedValue)
	return u.String()
}
