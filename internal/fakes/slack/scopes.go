package slackfake

import (
	"net/url"
	"slices"
	"strings"
)

// methodScopes are the bot scopes a method needs, from Slack's method
// reference; any one of a list will do. Methods not listed need none
// (auth.test, chat.getPermalink; apps.connections.open needs the app-level
// token's connections:write, which is no bot scope).
var methodScopes = map[string][]string{
	"chat.postMessage":             {"chat:write"},
	"chat.update":                  {"chat:write"},
	"chat.delete":                  {"chat:write"},
	"chat.postEphemeral":           {"chat:write"},
	"chat.startStream":             {"chat:write"},
	"chat.appendStream":            {"chat:write"},
	"chat.stopStream":              {"chat:write"},
	"assistant.threads.setStatus":  {"chat:write", "assistant:write"},
	"agents.sessions.setStatus":    {"chat:write"},
	"reactions.add":                {"reactions:write"},
	"reactions.remove":             {"reactions:write"},
	"users.info":                   {"users:read"},
	"files.getUploadURLExternal":   {"files:write"},
	"files.completeUploadExternal": {"files:write"},
	"files.info":                   {"files:read"},
}

// historyScope is the scope that reads a conversation's messages
// (conversations.replies, conversations.history), by kind of conversation.
var historyScope = map[string]string{
	"channel": "channels:history", "group": "groups:history", "im": "im:history", "mpim": "mpim:history",
}

// readScope is the scope of conversations.info, by kind of conversation.
var readScope = map[string]string{
	"channel": "channels:read", "group": "groups:read", "im": "im:read", "mpim": "mpim:read",
}

// RequiredScopes returns the bot scopes a call to method with params needs
// (any one of them will do); nil when it needs none. Reading a conversation
// needs the scope of its kind, as on Slack.
func (s *Server) RequiredScopes(method string, p url.Values) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requiredScopesLocked(method, p)
}

func (s *Server) requiredScopesLocked(method string, p url.Values) []string {
	switch method {
	case "conversations.replies", "conversations.history", "conversations.info":
		kind := kindFromID(p.Get("channel"))
		if ch, ok := s.channels[p.Get("channel")]; ok {
			kind = ch.info.Kind
		}
		if method == "conversations.info" {
			return []string{readScope[kind]}
		}
		return []string{historyScope[kind]}
	}
	return methodScopes[method]
}

// scopeErrorLocked returns the missing_scope answer for a call the granted
// scopes (WithScopes) do not cover, or nil.
func (s *Server) scopeErrorLocked(method string, p url.Values) map[string]any {
	if s.cfg.scopes == nil {
		return nil
	}
	need := s.requiredScopesLocked(method, p)
	if len(need) == 0 || slices.ContainsFunc(need, func(sc string) bool { return slices.Contains(s.cfg.scopes, sc) }) {
		return nil
	}
	return map[string]any{"ok": false, "error": "missing_scope", "needed": need[0], "provided": strings.Join(s.cfg.scopes, ",")}
}

// hasScope reports whether the bot was granted scope (always, without WithScopes).
func (s *Server) hasScope(scope string) bool {
	return s.cfg.scopes == nil || slices.Contains(s.cfg.scopes, scope)
}
