package slackfake

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"
)

// AgentStatus is one agents.sessions.setStatus call that the fake accepted.
type AgentStatus struct {
	Channel  string
	ThreadTS string
	Status   string // active, processing, suspended, closed
	// Title is the session's title after the call: a call that creates the
	// session sets it; later calls leave it.
	Title string
	// Warning is the warning the answer carried, if any.
	Warning string
}

// AgentSession is the state of one agent session (a thread's).
type AgentSession struct {
	Status string
	Title  string
}

// agentSessionStoppedWarning is the warning agents.sessions.setStatus adds
// while the app is not subscribed to agent_session_stopped: Slack then shows
// a loading indicator without a stop button.
const agentSessionStoppedWarning = "missing_agent_session_stopped_event_subscription"

// WithAgentSessions makes the app one declared as an agent in its settings
// (a manifest with features.agent_view, which adds the assistant:write
// scope): only such an app may create agent sessions. Without it
// agents.sessions.setStatus answers not_authorized, as Slack does for every
// other app.
func WithAgentSessions() Option {
	return func(c *config) { c.agentSessions = true }
}

// WithBotEvents subscribes the app to exactly these bot events (a manifest's
// settings.event_subscriptions.bot_events). Without agent_session_stopped
// among them, agents.sessions.setStatus warns
// missing_agent_session_stopped_event_subscription and the session shows no
// stop button (StopAgentSession cannot be clicked). Without the option the
// app is subscribed to every event.
func WithBotEvents(events ...string) Option {
	return func(c *config) { c.botEvents = append([]string{}, events...) }
}

// subscribedLocked says whether the app is subscribed to the bot event.
func (s *Server) subscribedLocked(event string) bool {
	return s.cfg.botEvents == nil || slices.Contains(s.cfg.botEvents, event)
}

// AgentStatuses returns the agents.sessions.setStatus calls accepted, in order.
func (s *Server) AgentStatuses() []AgentStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.agentStatuses)
}

// AgentSessionOf returns the agent session of a thread, if one was created.
func (s *Server) AgentSessionOf(channel, threadTS string) (AgentSession, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agentSessions[channel+"/"+threadTS]
	if !ok {
		return AgentSession{}, false
	}
	return *a, true
}

var agentSessionStatuses = []string{"active", "processing", "suspended", "closed"}

// agentsSessionsSetStatus creates the thread's session (with its title) or
// updates its status.
func (s *Server) agentsSessionsSetStatus(p url.Values) (map[string]any, string) {
	if !s.cfg.agentSessions {
		return nil, "not_authorized"
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
	key := ch.info.ID + "/" + ts
	sess := s.agentSessions[key]
	if sess == nil {
		sess = &AgentSession{Title: p.Get("title")}
		s.agentSessions[key] = sess
	}
	sess.Status = status
	rec := AgentStatus{Channel: ch.info.ID, ThreadTS: ts, Status: status, Title: sess.Title}
	body := map[string]any{"status": status, "agent_status": status, "title": sess.Title}
	if !s.subscribedLocked("agent_session_stopped") {
		rec.Warning = agentSessionStoppedWarning
		body["warning"] = agentSessionStoppedWarning
	}
	s.agentStatuses = append(s.agentStatuses, rec)
	return body, ""
}

// StopAgentSession has user click the stop button Slack shows on an agent
// session while it is processing: an agent_session_stopped event. The
// session's status does not change by itself; the app must set it. Slack
// shows the button only on a processing session of an app subscribed to the
// event: otherwise nothing can be clicked, and it returns "".
func (s *Server) StopAgentSession(channel, threadTS, user string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.agentSessions[channel+"/"+threadTS]
	if sess == nil || sess.Status != "processing" || !s.subscribedLocked("agent_session_stopped") {
		return ""
	}
	ev := map[string]any{
		"type": "agent_session_stopped", "channel": channel, "thread_ts": threadTS, "user": user,
		"streaming_message_ts": []string{}, "event_ts": s.nextTSLocked(),
	}
	return s.emitLocked(ev, channel, threadTS)
}

// AssistantStatusTimeout is how long an assistant status shows without a
// message in its thread: Slack removes it then.
const AssistantStatusTimeout = 2 * time.Minute

// maxLoadingMessages is the most loading_messages assistant.threads.setStatus takes.
const maxLoadingMessages = 10

// assistantStatus is a thread's assistant status as last set.
type assistantStatus struct {
	status  string
	loading []string
	set     time.Time
}

// AssistantStatus returns the assistant status a person sees in a thread now
// (on the server's clock), and its loading messages: what was set last,
// unless it was cleared or AssistantStatusTimeout passed without a message in
// the thread since it was set.
func (s *Server) AssistantStatus(channel, threadTS string) (string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.assistantStatuses[channel+"/"+threadTS]
	if st == nil || st.status == "" {
		return "", nil
	}
	last := st.set
	if ch := s.channels[channel]; ch != nil {
		for _, ts := range append([]string{threadTS}, ch.replies[threadTS]...) {
			if us, ok := parseTS(ts); ok {
				if at := time.UnixMicro(us); at.After(last) {
					last = at
				}
			}
		}
	}
	if s.cfg.now().Sub(last) >= AssistantStatusTimeout {
		return "", nil
	}
	return st.status, slices.Clone(st.loading)
}

// loadingMessages reads loading_messages: a JSON array, or slack-go's
// comma-separated form.
func loadingMessages(v string) ([]string, bool) {
	if v == "" {
		return nil, true
	}
	if strings.HasPrefix(v, "[") {
		var out []string
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, false
		}
		return out, true
	}
	return strings.Split(v, ","), true
}
