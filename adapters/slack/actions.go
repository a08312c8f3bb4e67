package slack

import (
	"context"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
)

// actionsBlockID names the actions block of the bot's buttons, so that a
// click on anything else (a block some other app put in a message) is not
// taken for one of them.
const actionsBlockID = "threadsmith_actions"

// maxSectionChars is Block Kit's limit on a section's text.
const maxSectionChars = 3000

// clickEventPrefix starts the EventID of a button click. Clicks have no
// event id; action_ts is unique to a click and the same in every delivery of
// it, so with the clicking user it de-duplicates like an event id.
const clickEventPrefix = "click/"

// SetActions implements chat.Actioner: the message (text, Markdown) becomes
// Block Kit blocks, its mrkdwn in section blocks and the buttons in one
// actions block; without actions the blocks are cleared and the text shows
// alone again. The message's text field stays the same mrkdwn, for
// notifications and clients without blocks.
func (a *Adapter) SetActions(ctx context.Context, thread chat.ThreadRef, id, text string, actions []chat.Action) error {
	if s := a.liveStreamOf(thread.Channel, id); s != nil {
		// A streamed message takes its buttons once, streamed after its
		// text, and keeps them while its text grows; other buttons (or
		// none) end the stream.
		switch {
		case len(actions) > 0 && !s.buttons:
			if done, err := a.appendStream(ctx, thread, id, s, text, actions); done {
				return err
			}
		case s.buttons && chat.SameActions(actions, s.actions):
			if done, err := a.appendStream(ctx, thread, id, s, text, nil); done {
				return err
			}
		default:
			if done, err := a.stopStream(ctx, thread, id); done {
				return err
			}
		}
	}
	opts := append(textOptions(text), slackapi.MsgOptionBlocks(actionBlocks(render(text), actions)...))
	_, _, _, err := a.api.UpdateMessageContext(ctx, thread.Channel, id, opts...)
	return apiError("chat.update", err)
}

// actionBlocks renders mrkdwn and buttons as blocks; none without buttons.
// The sections are verbatim: Slack then links and mentions nothing on its
// own, as parse=none does for the text (the mrkdwn has every <, > and &
// escaped already, see Mrkdwn).
func actionBlocks(mrkdwn string, actions []chat.Action) []slackapi.Block {
	if len(actions) == 0 {
		return nil
	}
	blocks := sectionBlocks(mrkdwn)
	if b := buttonsBlock(actions); b != nil {
		blocks = append(blocks, b)
	}
	return blocks
}

// sectionBlocks are the verbatim section blocks of mrkdwn, each within
// Block Kit's limit on a section's text.
func sectionBlocks(mrkdwn string) []slackapi.Block {
	var blocks []slackapi.Block
	for _, part := range splitSections(mrkdwn, maxSectionChars) {
		blocks = append(blocks, slackapi.NewSectionBlock(slackapi.NewTextBlockObject(slackapi.MarkdownType, part, false, true), nil, nil))
	}
	return blocks
}

// Block Kit's limits on a static_select: options per menu, and characters
// of an option's text and of a placeholder.
const (
	maxSelectOptions    = 100
	maxOptionTextChars  = 75
	maxPlaceholderChars = 150
)

// selectElement is the static_select of a menu action: its first
// maxSelectOptions valid options, their text cut to Block Kit's limit; nil
// when none is valid.
func selectElement(act chat.Action) slackapi.BlockElement {
	var opts []*slackapi.OptionBlockObject
	for _, o := range chat.MenuOptions(act, maxSelectOptions) {
		opts = append(opts, slackapi.NewOptionBlockObject(o.Value, slackapi.NewTextBlockObject(slackapi.PlainTextType, cutRunes(o.Label, maxOptionTextChars), false, false), nil))
	}
	if len(opts) == 0 {
		return nil
	}
	return slackapi.NewOptionsSelectBlockElement(slackapi.OptTypeStatic,
		slackapi.NewTextBlockObject(slackapi.PlainTextType, cutRunes(chat.MenuPlaceholder(act), maxPlaceholderChars), false, false), act.ID, opts...)
}

// cutRunes cuts s to at most n characters, the last an ellipsis when cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// buttonsBlock is the actions block of actions' valid buttons and menus, or
// nil.
func buttonsBlock(actions []chat.Action) slackapi.Block {
	var buttons []slackapi.BlockElement
	for _, act := range actions {
		if !chat.ValidActionID(act.ID) {
			continue
		}
		if len(act.Options) > 0 {
			if sel := selectElement(act); sel != nil {
				buttons = append(buttons, sel)
			}
			continue
		}
		value := act.ID // what a click sends back: the command
		if act.URL != "" {
			value = "" // a link: its click is not input
		}
		b := slackapi.NewButtonBlockElement(act.ID, value, slackapi.NewTextBlockObject(slackapi.PlainTextType, act.Label, true, false))
		b.URL = act.URL
		if act.Danger {
			b.Style = slackapi.StyleDanger
		}
		buttons = append(buttons, b)
	}
	if len(buttons) == 0 {
		return nil
	}
	return slackapi.NewActionBlock(actionsBlockID, buttons...)
}

// splitSections cuts mrkdwn into parts of at most limit characters, at a line
// break where there is one, else at a space, never inside an entity (&lt;) or
// a link (<url|label>). A cut inside a code block closes the block at the end
// of its part and opens it again at the start of the next, as a section is
// rendered on its own: the rest of the block would show as text, and the
// next code block's fences turned inside out (see inCodeBlock for what is a
// fence).
func splitSections(s string, limit int) []string {
	if strings.TrimSpace(s) == "" {
		return []string{"…"} // a section's text may not be empty
	}
	var parts []string
	for utf8.RuneCountInString(s) > limit {
		cut := byteIndexOfRune(s, limit-len(fence)-1) // room to close a block
		if i := strings.LastIndexByte(s[:cut], '\n'); i > 0 {
			cut = i
		} else if i := strings.LastIndexByte(s[:cut], ' '); i > 0 {
			cut = i
		}
		if i := strings.LastIndexAny(s[:cut], "<&"); i > 0 && !strings.ContainsAny(s[i:cut], ">;") {
			cut = i
		}
		part, rest := s[:cut], strings.TrimLeft(s[cut:], "\n")
		if inCodeBlock(part) {
			part, rest = part+"\n"+fence, fence+"\n"+rest
		}
		parts = append(parts, part)
		s = rest
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}

// fence opens and closes a code block in mrkdwn.
const fence = "```"

// byteIndexOfRune returns the byte offset of the n-th rune of s.
func byteIndexOfRune(s string, n int) int {
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

// clickInbound turns a click on one of the bot's command buttons into the
// command's Inbound. ok is false for anything else (a link button, another
// block's element, an ephemeral message), which is acknowledged and dropped.
func clickInbound(cb slackapi.InteractionCallback, teamID string) (chat.Inbound, bool) {
	if cb.Type != slackapi.InteractionTypeBlockActions || cb.Container.IsEphemeral || len(cb.ActionCallback.BlockActions) != 1 {
		return chat.Inbound{}, false
	}
	act := cb.ActionCallback.BlockActions[0]
	if act.BlockID != actionsBlockID || !chat.ValidActionID(act.ActionID) || act.ActionTs == "" {
		return chat.Inbound{}, false
	}
	var text string
	switch act.Type {
	case slackapi.ActionType(slackapi.OptTypeStatic):
		v := act.SelectedOption.Value
		if !chat.ValidChoice(v) || !offered(cb.Message, act.ActionID, v) {
			return chat.Inbound{}, false
		}
		text = chat.ChoiceText(act.ActionID, v)
	case "button", "": // a button's, which payloads without a type are too
		if act.ActionID != act.Value {
			return chat.Inbound{}, false // a link button has no value
		}
		text = chat.ActionText(act.ActionID)
	default:
		return chat.Inbound{}, false
	}
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	root := cb.Message.ThreadTimestamp
	if root == "" {
		root = cb.Container.ThreadTs
	}
	if channel == "" || cb.User.ID == "" || root == "" {
		return chat.Inbound{}, false // the bot's buttons are only ever in threads
	}
	dm := strings.HasPrefix(channel, "D")
	if dm {
		teamID = "" // as for messages: no team for direct conversations
	}
	return chat.Inbound{
		Thread:  chat.ThreadRef{Platform: Platform, Team: teamID, Channel: channel, Thread: root},
		EventID: clickEventPrefix + cb.User.ID + "/" + act.ActionTs,
		Author:  chat.Author{ID: cb.User.ID},
		Text:    text,
		DM:      dm,
		Time:    tsTime(act.ActionTs),
	}, true
}

// offered says whether value is an option of the bot's menu actionID in
// msg, the message the choice was made on as the payload carries it: a
// value the menu never offered is not taken.
func offered(msg slackapi.Message, actionID, value string) bool {
	for _, b := range msg.Blocks.BlockSet {
		ab, ok := b.(*slackapi.ActionBlock)
		if !ok || ab.BlockID != actionsBlockID || ab.Elements == nil {
			continue
		}
		for _, el := range ab.Elements.ElementSet {
			sel, ok := el.(*slackapi.SelectBlockElement)
			if !ok || sel.ActionID != actionID {
				continue
			}
			for _, o := range sel.Options {
				if o != nil && o.Value == value {
					return true
				}
			}
		}
	}
	return false
}

// onClick delivers a click on one of the bot's buttons. The platform has
// been answered already: Slack wants a click acknowledged at once and does
// not deliver it again on failure, so a click the handler fails to take is
// only logged (the person can click again).
func (a *Adapter) onClick(ctx context.Context, d *dispatcher, cb slackapi.InteractionCallback) {
	in, ok := clickInbound(cb, d.id.TeamID)
	if !ok {
		return
	}
	d.submit(in.Thread, func() { _ = d.deliver(ctx, in) })
}
