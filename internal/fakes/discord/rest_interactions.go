package discordfake

import (
	"encoding/json"
	"slices"
	"time"
)

// responseData is the data of an interaction callback or a followup.
type responseData struct {
	Content    string            `json:"content"`
	Embeds     []json.RawMessage `json:"embeds"`
	Components json.RawMessage   `json:"components"`
	Flags      int               `json:"flags"`
}

// interactionMessageLocked creates a response or followup message in the
// interaction's channel, authored by the bot through the application's webhook.
func (s *Server) interactionMessageLocked(in *interactionState, d responseData, files []File, now time.Time) *messageState {
	ch := s.channels[in.ChannelID]
	m := s.newMessageLocked(ch, s.cfg.botID, d.Content, now)
	m.Type = 20
	m.WebhookID = s.cfg.appID
	m.InteractionID = in.ID
	m.interactionName = in.CommandName
	m.interactionUser = in.UserID
	m.Embeds = d.Embeds
	if !emptyJSON(d.Components) {
		m.Components = d.Components
	}
	const settable = MessageFlagEphemeral | 1<<2 | 1<<12
	m.Flags = d.Flags & settable
	m.Attachments = s.attachLocked(ch.ID, files)
	return m
}

// interactionCallback is POST /interactions/{id}/{token}/callback: one
// response per interaction, within the deadline.
func (s *Server) interactionCallback(c *call) response {
	in := s.interactions[c.path("interaction")]
	if in == nil || in.Token != c.path("token") {
		return errUnknownInteraction
	}
	if c.now.Sub(in.DispatchedAt) > s.cfg.deadline {
		in.RejectedCallbacks++
		return errUnknownInteraction
	}
	if in.Responded {
		in.RejectedCallbacks++
		return errAlreadyAcked
	}
	var body struct {
		Type int             `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if err := c.decode(&body); err != nil {
		return errInvalidJSON
	}
	var d responseData
	if !emptyJSON(body.Data) {
		if err := json.Unmarshal(body.Data, &d); err != nil {
			return invalidForm(map[string]string{"data": "DICT_TYPE_CONVERT: Only dictionaries may be used in a DictType"})
		}
	}
	am, resp, valid := allowedMentionsOf(body.Data)
	if !valid {
		return resp
	}
	component := in.CustomID != ""
	switch body.Type {
	case ResponseDeferredMessageUpdate, ResponseUpdateMessage:
		if !component {
			return invalidForm(map[string]string{"type": "INTERACTION_RESPONSE_TYPE_INVALID: Invalid interaction response type"})
		}
		if body.Type == ResponseUpdateMessage {
			m := s.messages[in.MessageID]
			if m == nil || m.deleted {
				return errUnknownInteraction
			}
			if resp, ok := s.applyEditLocked(m, body.Data, c.files, c.now); !ok {
				return resp
			}
			s.noticeLocked(c.route, m, am, true)
			s.dispatchMessageLocked("MESSAGE_UPDATE", m)
		}
	case ResponseChannelMessageWithSource:
		if resp, valid := validateMessage(d.Content, d.Embeds, d.Components, len(c.files), 0); !valid {
			return resp
		}
		m := s.interactionMessageLocked(in, d, c.files, c.now)
		s.noticeLocked(c.route, m, am, false)
		in.originalID = m.ID
		s.dispatchMessageLocked("MESSAGE_CREATE", m)
	case ResponseDeferredChannelMessage:
		m := s.interactionMessageLocked(in, responseData{Flags: d.Flags}, nil, c.now)
		m.Flags |= MessageFlagLoading
		in.originalID = m.ID
		s.dispatchMessageLocked("MESSAGE_CREATE", m)
	case ResponseModal:
		// Nothing to show in the channel; the user sees the modal.
	default:
		// PONG answers PINGs, 8 autocomplete: neither applies to a
		// command or a click.
		return invalidForm(map[string]string{"type": "INTERACTION_RESPONSE_TYPE_INVALID: Invalid interaction response type"})
	}
	in.Responded = true
	in.ResponseType = body.Type
	in.Ephemeral = d.Flags&MessageFlagEphemeral != 0
	in.RespondedAt = c.now
	in.Latency = c.now.Sub(in.DispatchedAt)
	in.Response = append(json.RawMessage(nil), c.body...)
	return noContent()
}

// webhookInteractionLocked resolves the {app}/{token} of a webhook route to
// its interaction; tokens expire like Discord's.
func (s *Server) webhookInteractionLocked(c *call) (*interactionState, response, bool) {
	if c.path("app") != s.cfg.appID {
		return nil, errUnknownWebhook, false
	}
	in := s.byToken[c.path("token")]
	if in == nil || c.now.Sub(in.DispatchedAt) > s.cfg.tokenTTL {
		return nil, errInvalidToken, false
	}
	return in, response{}, true
}

// webhookMessageLocked finds @original or a followup of the interaction.
func (s *Server) webhookMessageLocked(in *interactionState, id string) *messageState {
	if id == "@original" {
		id = in.originalID
	} else if id != in.originalID && !slices.Contains(in.followupIDs, id) {
		return nil
	}
	m := s.messages[id]
	if m == nil || m.deleted {
		return nil
	}
	return m
}

func (s *Server) getWebhookMessage(c *call) response {
	in, resp, valid := s.webhookInteractionLocked(c)
	if !valid {
		return resp
	}
	m := s.webhookMessageLocked(in, c.path("message"))
	if m == nil {
		return errUnknownMessage
	}
	return ok(s.messageObjLocked(m, false, false))
}

func (s *Server) editWebhookMessage(c *call) response {
	in, resp, valid := s.webhookInteractionLocked(c)
	if !valid {
		return resp
	}
	m := s.webhookMessageLocked(in, c.path("message"))
	if m == nil {
		return errUnknownMessage
	}
	am, resp, valid := allowedMentionsOf(c.body)
	if !valid {
		return resp
	}
	wasLoading := m.Flags&MessageFlagLoading != 0
	if resp, valid := s.applyEditLocked(m, c.body, c.files, c.now); !valid {
		return resp
	}
	// Filling in a deferred answer is its first content, not an edit.
	s.noticeLocked(c.route, m, am, !wasLoading)
	s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	return ok(s.messageObjLocked(m, false, false))
}

func (s *Server) deleteWebhookMessage(c *call) response {
	in, resp, valid := s.webhookInteractionLocked(c)
	if !valid {
		return resp
	}
	m := s.webhookMessageLocked(in, c.path("message"))
	if m == nil {
		return errUnknownMessage
	}
	m.deleted = true
	s.dispatchMessageDeleteLocked(m)
	return noContent()
}

// createFollowup is POST /webhooks/{app}/{token}. The first followup after a
// deferral fills in the "thinking" message instead of adding one.
func (s *Server) createFollowup(c *call) response {
	in, resp, valid := s.webhookInteractionLocked(c)
	if !valid {
		return resp
	}
	if !in.Responded {
		return errUnknownWebhook
	}
	var d responseData
	if err := c.decode(&d); err != nil {
		return errInvalidJSON
	}
	if resp, valid := validateMessage(d.Content, d.Embeds, d.Components, len(c.files), 0); !valid {
		return resp
	}
	am, resp, valid := allowedMentionsOf(c.body)
	if !valid {
		return resp
	}
	var m *messageState
	if orig := s.messages[in.originalID]; orig != nil && !orig.deleted && orig.Flags&MessageFlagLoading != 0 {
		if resp, valid := s.applyEditLocked(orig, c.body, c.files, c.now); !valid {
			return resp
		}
		m = orig
		s.dispatchMessageLocked("MESSAGE_UPDATE", m)
	} else {
		m = s.interactionMessageLocked(in, d, c.files, c.now)
		in.followupIDs = append(in.followupIDs, m.ID)
		s.dispatchMessageLocked("MESSAGE_CREATE", m)
	}
	s.noticeLocked(c.route, m, am, false)
	if c.r.URL.Query().Get("wait") != "true" {
		return noContent()
	}
	return ok(s.messageObjLocked(m, false, false))
}
