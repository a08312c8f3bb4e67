package discordfake

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Component types and button styles, as Discord numbers them.
const (
	componentActionRow    = 1
	componentButton       = 2
	componentStringSelect = 3
	buttonStyleLink       = 5
)

// Button is a button of a message's action rows, as Click finds it.
type Button struct {
	Style    int    `json:"style"`
	Label    string `json:"label"`
	CustomID string `json:"custom_id"`
	URL      string `json:"url"`
	Disabled bool   `json:"disabled"`
}

// Buttons returns the buttons of a message's action rows, in order.
func (s *Server) Buttons(messageID string) []Button {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[messageID]
	if m == nil || m.deleted {
		return nil
	}
	return buttonsOf(m.Components)
}

func buttonsOf(raw json.RawMessage) []Button {
	return componentsOf[Button](raw, componentButton)
}

// componentsOf decodes the components of type typ in the action rows of
// raw, in order.
func componentsOf[T any](raw json.RawMessage, typ int) []T {
	var rows []struct {
		Components []json.RawMessage `json:"components"`
	}
	if emptyJSON(raw) || json.Unmarshal(raw, &rows) != nil {
		return nil
	}
	var out []T
	for _, r := range rows {
		for _, c := range r.Components {
			var probe struct {
				Type int `json:"type"`
			}
			var v T
			if json.Unmarshal(c, &probe) == nil && probe.Type == typ && json.Unmarshal(c, &v) == nil {
				out = append(out, v)
			}
		}
	}
	return out
}

// validateComponents checks a message's components as Discord does for
// action rows of buttons and string selects: at most 5 rows, each of 1 to 5
// buttons or of one string select; a button's style 1–5; a label of at most
// 80 characters (or, without one, an emoji); a link button (style 5) with an
// http, https or discord url of at most 512 characters and no custom_id, any
// other with a custom_id of 1–100 characters and no url; a select as
// validSelect says; custom_ids unique in the message.
func validateComponents(raw json.RawMessage) (response, bool) {
	if emptyJSON(raw) {
		return response{}, true
	}
	bad := func(field, msg string) (response, bool) {
		return invalidForm(map[string]string{field: msg}), false
	}
	var rows []struct {
		Type       int               `json:"type"`
		Components []json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return bad("components", "BASE_TYPE_ARRAY: Must be an array.")
	}
	if len(rows) > 5 {
		return bad("components", "BASE_TYPE_MAX_LENGTH: Must be 5 or fewer in length.")
	}
	ids := map[string]bool{}
	for i, r := range rows {
		at := "components." + strconv.Itoa(i)
		if r.Type != componentActionRow {
			return bad(at+".type", "UNION_TYPE_CHOICES: Value of field \"type\" must be one of (1,).")
		}
		if len(r.Components) == 0 || len(r.Components) > 5 {
			return bad(at+".components", "BASE_TYPE_BAD_LENGTH: Must be between 1 and 5 in length.")
		}
		var probe struct {
			Type int `json:"type"`
		}
		if json.Unmarshal(r.Components[0], &probe) == nil && probe.Type == componentStringSelect {
			if len(r.Components) != 1 {
				return bad(at+".components", "COMPONENT_LAYOUT_WIDTH_EXCEEDED: A select menu takes a row of its own.")
			}
			var sel SelectMenu
			if err := json.Unmarshal(r.Components[0], &sel); err != nil {
				return bad(at+".components.0", "this fake could not read the select menu")
			}
			if field, msg := validSelect(sel); field != "" {
				return bad(at+".components.0."+field, msg)
			}
			if ids[sel.CustomID] {
				return bad(at+".components.0.custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED: Component custom id cannot be duplicated")
			}
			ids[sel.CustomID] = true
			continue
		}
		for j, c := range r.Components {
			at := at + ".components." + strconv.Itoa(j)
			var b struct {
				Type  int             `json:"type"`
				Emoji json.RawMessage `json:"emoji"`
				Button
			}
			if json.Unmarshal(c, &b) != nil || b.Type != componentButton {
				return bad(at+".type", "this fake knows buttons only")
			}
			switch {
			case b.Style < 1 || b.Style > 6:
				return bad(at+".style", "BASE_TYPE_CHOICES: Value must be one of {1, 2, 3, 4, 5, 6}.")
			case utf8.RuneCountInString(b.Label) > 80:
				return bad(at+".label", "BASE_TYPE_MAX_LENGTH: Must be 80 or fewer in length.")
			case b.Label == "" && emptyJSON(b.Emoji):
				return bad(at+".label", "COMPONENT_LABEL_OR_EMOJI_REQUIRED: A button needs a label or an emoji.")
			case b.Style == buttonStyleLink && (b.URL == "" || b.CustomID != ""):
				return bad(at+".url", "COMPONENT_LINK_BUTTON_URL_REQUIRED: A link button needs a url and no custom_id.")
			case utf8.RuneCountInString(b.URL) > 512:
				return bad(at+".url", "BASE_TYPE_MAX_LENGTH: Must be 512 or fewer in length.")
			case b.URL != "" && !linkScheme(b.URL):
				return bad(at+".url", "URL_TYPE_INVALID_SCHEME: Scheme must be one of ('http', 'https', 'discord').")
			case b.Style != buttonStyleLink && (b.CustomID == "" || b.URL != ""):
				return bad(at+".custom_id", "COMPONENT_CUSTOM_ID_REQUIRED: A custom id is required.")
			case len(b.CustomID) > 100:
				return bad(at+".custom_id", "BASE_TYPE_MAX_LENGTH: Must be 100 or fewer in length.")
			case b.CustomID != "" && ids[b.CustomID]:
				return bad(at+".custom_id", "COMPONENT_CUSTOM_ID_DUPLICATED: Component custom id cannot be duplicated")
			}
			ids[b.CustomID] = b.CustomID != ""
		}
	}
	return response{}, true
}

// Click has userID click the button customID of a message in channelID and
// dispatches INTERACTION_CREATE of type 3 (MESSAGE_COMPONENT) with the
// message; it returns the interaction id. Link buttons send no interaction,
// and a button the message does not have, or a disabled one, cannot be
// clicked: either fails the test. The answer is due within the deadline: 4,
// 5, 6 (DEFERRED_UPDATE_MESSAGE) or 7 (UPDATE_MESSAGE, which edits the
// message); @original then names the message itself.
func (s *Server) Click(channelID, messageID, userID, customID string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m := s.botMessageLocked("Click", channelID, messageID, userID)
	if m == nil {
		return ""
	}
	var btn *Button
	for _, b := range buttonsOf(m.Components) {
		if b.CustomID == customID && b.Style != buttonStyleLink && !b.Disabled {
			btn = &b
			break
		}
	}
	if btn == nil {
		s.t.Errorf("discordfake: Click: message %s has no enabled button %q (it has %+v)", messageID, customID, buttonsOf(m.Components))
		return ""
	}
	return s.dispatchComponentLocked(ch, m, userID, obj{"custom_id": customID, "component_type": componentButton})
}

// botMessageLocked is the bot's message messageID in channelID as userID
// sees it, or nil (the test failed) when there is none; op names the caller.
func (s *Server) botMessageLocked(op, channelID, messageID, userID string) (*channelState, *messageState) {
	s.t.Helper()
	ch, ok := s.userChannelLocked(channelID, userID)
	if !ok {
		return nil, nil
	}
	m := s.messageInLocked(ch, messageID)
	if m == nil || m.AuthorID != s.cfg.botID {
		s.t.Errorf("discordfake: %s: no message %s of the bot in %s", op, messageID, channelID)
		return nil, nil
	}
	return ch, m
}

// dispatchComponentLocked dispatches INTERACTION_CREATE of type 3
// (MESSAGE_COMPONENT) by userID on the bot's message m in ch, with data and
// the message; it returns the interaction id.
func (s *Server) dispatchComponentLocked(ch *channelState, m *messageState, userID string, data obj) string {
	in := &interactionState{Interaction: Interaction{
		ID:           s.nextIDLocked(),
		Token:        newInteractionToken(),
		CustomID:     data["custom_id"].(string),
		MessageID:    m.ID,
		GuildID:      ch.GuildID,
		ChannelID:    ch.ID,
		UserID:       userID,
		DispatchedAt: s.cfg.clock.Now(),
	}}
	in.originalID = m.ID // for a component, @original is the message clicked
	return s.dispatchInteractionLocked(in, ch, 3, obj{"data": data, "message": s.messageObjLocked(m, true, false)})
}

// linkScheme says whether Discord takes url for a link button: only http,
// https and discord URLs.
func linkScheme(url string) bool {
	scheme, _, ok := strings.Cut(url, "://")
	switch strings.ToLower(scheme) {
	case "http", "https", "discord":
		return ok
	}
	return false
}

// SelectMenu is a string select of a message's action rows, as Choose finds
// it.
type SelectMenu struct {
	CustomID    string         `json:"custom_id"`
	Placeholder string         `json:"placeholder"`
	MinValues   *int           `json:"min_values"`
	MaxValues   *int           `json:"max_values"`
	Options     []SelectOption `json:"options"`
	Disabled    bool           `json:"disabled"`
}

// SelectOption is one option of a string select.
type SelectOption struct {
	Label       string `json:"label"`
	Value       string `json:"value"`
	Description string `json:"description"`
}

// validSelect checks a string select as Discord does: a custom_id of 1–100
// characters, a placeholder of at most 150, min_values and max_values within
// 0–25 and 1–25, 1 to 25 options, each with a label of 1–100 characters, a
// value of 1–100 and a description of at most 100, the values unique. It
// returns the field at fault and Discord's message, or "".
func validSelect(sel SelectMenu) (field, msg string) {
	switch {
	case sel.CustomID == "":
		return "custom_id", "COMPONENT_CUSTOM_ID_REQUIRED: A custom id is required."
	case len(sel.CustomID) > 100:
		return "custom_id", "BASE_TYPE_MAX_LENGTH: Must be 100 or fewer in length."
	case utf8.RuneCountInString(sel.Placeholder) > 150:
		return "placeholder", "BASE_TYPE_MAX_LENGTH: Must be 150 or fewer in length."
	case sel.MinValues != nil && (*sel.MinValues < 0 || *sel.MinValues > 25):
		return "min_values", "NUMBER_TYPE_MAX: Int value should be less than or equal to 25."
	case sel.MaxValues != nil && (*sel.MaxValues < 1 || *sel.MaxValues > 25):
		return "max_values", "NUMBER_TYPE_MAX: Int value should be less than or equal to 25."
	case len(sel.Options) == 0 || len(sel.Options) > 25:
		return "options", "BASE_TYPE_BAD_LENGTH: Must be between 1 and 25 in length."
	}
	values := map[string]bool{}
	for k, o := range sel.Options {
		at := "options." + strconv.Itoa(k)
		switch {
		case o.Label == "" || utf8.RuneCountInString(o.Label) > 100:
			return at + ".label", "BASE_TYPE_BAD_LENGTH: Must be between 1 and 100 in length."
		case o.Value == "" || utf8.RuneCountInString(o.Value) > 100:
			return at + ".value", "BASE_TYPE_BAD_LENGTH: Must be between 1 and 100 in length."
		case utf8.RuneCountInString(o.Description) > 100:
			return at + ".description", "BASE_TYPE_MAX_LENGTH: Must be 100 or fewer in length."
		case values[o.Value]:
			return at + ".value", "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED: Select component option values must be unique"
		}
		values[o.Value] = true
	}
	return "", ""
}

// Selects returns the string selects of a message's action rows, in order.
func (s *Server) Selects(messageID string) []SelectMenu {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[messageID]
	if m == nil || m.deleted {
		return nil
	}
	return selectsOf(m.Components)
}

func selectsOf(raw json.RawMessage) []SelectMenu {
	return componentsOf[SelectMenu](raw, componentStringSelect)
}

// Choose has userID pick value in the string select customID of a message
// in channelID and dispatches INTERACTION_CREATE of type 3
// (MESSAGE_COMPONENT) with component_type 3, the values and the message, as
// Click does; it returns the interaction id. A menu the message does not
// have, a disabled one, or a value it does not offer fails the test:
// Discord lets people pick only what the menu shows.
func (s *Server) Choose(channelID, messageID, userID, customID, value string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, m := s.botMessageLocked("Choose", channelID, messageID, userID)
	if m == nil {
		return ""
	}
	var found *SelectMenu
	for _, sel := range selectsOf(m.Components) {
		if sel.CustomID == customID && !sel.Disabled {
			found = &sel
			break
		}
	}
	if found == nil {
		s.t.Errorf("discordfake: Choose: message %s has no enabled menu %q", messageID, customID)
		return ""
	}
	if !slices.ContainsFunc(found.Options, func(o SelectOption) bool { return o.Value == value }) {
		s.t.Errorf("discordfake: Choose: menu %q of message %s offers no %q (it has %+v)", customID, messageID, value, found.Options)
		return ""
	}
	return s.dispatchComponentLocked(ch, m, userID, obj{"custom_id": customID, "component_type": componentStringSelect, "values": []string{value}})
}
