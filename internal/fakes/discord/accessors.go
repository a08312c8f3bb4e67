package discordfake

import (
	"maps"
	"slices"
)

// This file reads the fake's state for assertions. Every accessor returns
// copies: tests may keep and change them.

// Messages returns the messages of a channel or thread, oldest first, as they
// stand (edits applied, deleted and ephemeral ones left out).
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		return nil
	}
	var out []Message
	for _, m := range visibleMessages(ch) {
		out = append(out, m.clone())
	}
	return out
}

// Message returns one message by id, wherever it is (ephemeral ones too),
// unless it was deleted.
func (s *Server) Message(messageID string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[messageID]
	if m == nil || m.deleted {
		return Message{}, false
	}
	return m.clone(), true
}

// Reactions returns the reactions on a message in the order they were added.
func (s *Server) Reactions(channelID, messageID string) []Reaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[messageID]
	if m == nil || m.ChannelID != channelID {
		return nil
	}
	return slices.Clone(m.reactions)
}

// Threads returns every thread opened, in order.
func (s *Server) Threads() []Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Channel, 0, len(s.threads))
	for _, id := range s.threads {
		out = append(out, s.channels[id].Channel)
	}
	return out
}

// Channel returns a channel, thread or DM channel by id.
func (s *Server) Channel(channelID string) (Channel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := s.channels[channelID]
	if ch == nil {
		return Channel{}, false
	}
	return ch.Channel, true
}

// Commands returns the registered commands of a guild, or the global ones
// for guildID "".
func (s *Server) Commands(guildID string) []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Command
	for _, cs := range s.commands[guildID] {
		c := cs.Command
		c.Options = slices.Clone(c.Options)
		out = append(out, c)
	}
	return out
}

// CommandOverwrites counts the bulk overwrites (PUT) of a guild's commands,
// or of the global ones for guildID "".
func (s *Server) CommandOverwrites(guildID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overwrites[guildID]
}

// Interactions returns every interaction dispatched, in order.
func (s *Server) Interactions() []Interaction {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Interaction, 0, len(s.interOrder))
	for _, id := range s.interOrder {
		out = append(out, s.interactionLocked(s.interactions[id]))
	}
	return out
}

// Interaction returns one interaction by id.
func (s *Server) Interaction(interactionID string) (Interaction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.interactions[interactionID]
	if in == nil {
		return Interaction{}, false
	}
	return s.interactionLocked(in), true
}

func (s *Server) interactionLocked(in *interactionState) Interaction {
	out := in.Interaction
	out.Options = maps.Clone(in.Options)
	if m := s.messages[in.originalID]; m != nil && !m.deleted {
		orig := m.clone()
		out.Original = &orig
	}
	out.Followups = nil
	for _, id := range in.followupIDs {
		if m := s.messages[id]; m != nil && !m.deleted {
			out.Followups = append(out.Followups, m.clone())
		}
	}
	return out
}

// Requests returns every REST request received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// UnknownRoutes returns the requests for routes the fake does not serve.
func (s *Server) UnknownRoutes() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Route == "" {
			out = append(out, r)
		}
	}
	return out
}

// RateLimited counts the 429 answers given.
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateLimited
}

// Typing returns every typing indicator the bot sent, in order.
func (s *Server) Typing() []Typing {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.typing)
}

// GatewayReceived returns every payload clients sent, in order.
func (s *Server) GatewayReceived() []GatewayPayload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.received)
}

// GatewaySent returns every payload the fake put on a connection, in order;
// close frames appear with Op -1 and Type "CLOSE".
func (s *Server) GatewaySent() []GatewayPayload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// Identifies returns every IDENTIFY received, in order.
func (s *Server) Identifies() []Identify {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.identifies)
}

// Intents returns the intents of the last IDENTIFY, or 0.
func (s *Server) Intents() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.identifies) == 0 {
		return 0
	}
	return s.identifies[len(s.identifies)-1].Intents
}

// Readies counts the READY dispatches sent.
func (s *Server) Readies() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readies
}

// Resumes counts the RESUMED dispatches sent.
func (s *Server) Resumes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumed
}

// Connections counts the gateway connections open now.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
