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
	r.LLM.BaseURL = redactURL(c.LLM.BaseURL)
	if c.LLM.Models != nil {
		r.LLM.Models = make([]Model, len(c.LLM.Models))
		for i, m := range c.LLM.Models {
			m.APIKey = redact(m.APIKey)
			m.BaseURL = redactURL(m.BaseURL)
			r.LLM.Models[i] = m
		}
	}
	r.Agent.BashEnv = redactValues(c.Agent.BashEnv)
	if c.Workspace.Repos != nil {
		r.Workspace.Repos = make([]Repo, len(c.Workspace.Repos))
		for i, repo := range c.Workspace.Repos {
			repo.Token = redact(repo.Token)
			repo.WebhookSecret = redact(repo.WebhookSecret)
			repo.URL = redactURL(repo.URL)
			r.Workspace.Repos[i] = repo
		}
	}
	if c.MCP.Servers != nil {
		r.MCP.Servers = make([]MCPServer, len(c.MCP.Servers))
		for i, srv := range c.MCP.Servers {
			srv.Env = redactValues(srv.Env)
			srv.Headers = redactValues(srv.Headers)
			srv.URL = redactQuery(redactURL(srv.URL))
			r.MCP.Servers[i] = srv
		}
	}
	r.HTTP.SessionKey = redact(c.HTTP.SessionKey)
	r.Slack.BotToken = redact(c.Slack.BotToken)
	r.Slack.AppToken = redact(c.Slack.AppToken)
	r.Slack.SigningSecret = redact(c.Slack.SigningSecret)
	r.Slack.APIURL = redactURL(c.Slack.APIURL)
	r.Discord.Token = redact(c.Discord.Token)
	r.Discord.APIURL = redactURL(c.Discord.APIURL)
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

// redactQuery hides the values of a URL's query: an MCP server's URL may
// carry its key there (https://mcp.example.com/mcp?key=…).
func redactQuery(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.RawQuery == "" {
		return s
	}
	q := u.Query()
	for k := range q {
		q[k] = []string{redactedValue}
	}
	u.RawQuery = q.Encode()
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
