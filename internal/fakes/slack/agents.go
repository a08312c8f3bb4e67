package slackfake

import (
	"net/url"
	"slices"
)

// AgentStatus is one agents.sessions.setStatus call that the fake accepted.
type AgentStatus struct {
	Channel  string
	ThreadTS string
	Status   string // active, processing, suspended, closed
}

// WithAgentSessions lets agents.sessions.setStatus succeed, as in a workspace
// with Slack's agent sessions. Without it the method answers unknown_method,
// as a workspace without them does.
func WithAgentSessions() Option {
	return func(c *config) { c.agentSessions = true }
}

// AgentStatuses returns the agents.sessions.setStatus calls accepted, in order.
func (s *Server) AgentStatuses() []AgentStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.agentStatuses)
}

var agentSessionStatuses = []string{"active", "processing", "suspended", "closed"}

func (s *Server) agentsSessionsSetStatus(p url.Values) (map[string]any, string) {
	if !s.cfg.agentSessions {
		return nil, "unknown_method"
	}
	status := p.Get("status")
	if !slices.Contains(agentSessionStatuses, status) {
		return nil, "invalid_arguments"
	}
	ch, code := s.lookupChannelLocked(p.Get("channel_id"))
	if code != "" {
		return nil, code
	}
	ts := p.Get("thread_ts")
	if m, ok := ch.msgs[ts]; !ok || m.deleted || m.ThreadTS != "" && m.ThreadTS != ts {
		return nil, "thread_not_found"
	}
	s.agentStatuses = append(s.agentStatuses, AgentStatus{Channel: ch.info.ID, ThreadTS: ts, Status: status})
	return map[string]any{"status": status, "agent_status": status}, ""
}

// StopAgentSession has user click the stop button Slack shows on an agent
// session while it is processing: an agent_session_stopped event. The
// session's status does not change by itself; the app must set it.
func (s *Server) StopAgentSession(channel, threadTS, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := map[string]any{
		"type": "agent_session_stopped", "channel": channel, "thread_ts": threadTS, "user": user,
		"streaming_message_ts": []string{}, "event_ts": s.nextTSLocked(),
	}
	return s.emitLocked(ev, channel, threadTS)
}
