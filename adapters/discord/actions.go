package discord

import (
	"context"
	"encoding/json"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// maxButtons is how many buttons one action row holds.
const maxButtons = 5

// Discord's limits on a string select: options per menu, and characters of
// an option's label and of the placeholder. A message holds 5 action rows,
// a select menu one row on its own.
const (
	maxSelectOptions    = 25
	maxOptionLabelChars = 100
	maxPlaceholderChars = 150
	maxRows             = 5
)

// SetActions implements chat.Actioner: the message gets one action row of
// buttons (custom_id the action's id; a link button carries its url
// instead), or none, with its text (PATCH replaces the content and the
// components it is given).
func (a *Adapter) SetActions(ctx context.Context, thread chat.ThreadRef, id, text string, actions []chat.Action) error {
	components := actionComponents(actions)
	text = Text(text)
	return a.chatCall(ctx, "edit", discordgo.EndpointChannelMessage(thread.Channel, ""), func(opts ...discordgo.RequestOption) error {
		_, err := a.s.ChannelMessageEditComplex(&discordgo.MessageEdit{
			ID: id, Channel: thread.Channel, Content: &text, Components: &components,
			AllowedMentions: a.mentionsIn(thread.Channel), Flags: noEmbeds,
		}, opts...)
		return err
	})
}

// actionComponents is the action row of actions' buttons, after a row for
// each select menu; empty (which clears a message's components) without any.
func actionComponents(actions []chat.Action) []discordgo.MessageComponent {
	var buttons, rows []discordgo.MessageComponent
	for _, act := range actions {
		if !chat.ValidActionID(act.ID) {
			continue
		}
		if len(act.Options) > 0 {
			if sel, ok := selectMenu(act); ok && len(rows) < maxRows-1 {
				rows = append(rows, discordgo.ActionsRow{Components: []discordgo.MessageComponent{sel}})
			}
			continue
		}
		if len(buttons) == maxButtons {
			continue
		}
		b := discordgo.Button{Label: act.Label, Style: discordgo.SecondaryButton, CustomID: act.ID}
		switch {
		case act.URL != "":
			// A link opens in the browser and sends no interaction.
			b.Style, b.URL, b.CustomID = discordgo.LinkButton, act.URL, ""
		case act.Danger:
			b.Style = discordgo.DangerButton
		}
		buttons = append(buttons, b)
	}
	if len(buttons) > 0 {
		rows = append(rows, discordgo.ActionsRow{Components: buttons})
	}
	if len(rows) == 0 {
		return []discordgo.MessageComponent{}
	}
	return rows
}

// selectMenu is the string select of a menu action: its first
// maxSelectOptions valid options, labels cut to Discord's limit; false when
// none is valid.
func selectMenu(act chat.Action) (discordgo.SelectMenu, bool) {
	var opts []discordgo.SelectMenuOption
	for _, o := range chat.MenuOptions(act, maxSelectOptions) {
		opts = append(opts, discordgo.SelectMenuOption{Label: truncateRunes(o.Label, maxOptionLabelChars), Value: o.Value})
	}
	one := 1
	return discordgo.SelectMenu{
		MenuType: discordgo.StringSelectMenu, CustomID: act.ID, Placeholder: truncateRunes(chat.MenuPlaceholder(act), maxPlaceholderChars),
		MinValues: &one, MaxValues: 1, Options: opts,
	}, len(opts) > 0
}

// choiceOf is the value chosen in one of the bot's select menus, if the
// interaction is such a choice: one ValidChoice value that the menu of the
// message it was made on offers.
func choiceOf(i *discordgo.Interaction, data discordgo.MessageComponentInteractionData) (string, bool) {
	if data.ComponentType != discordgo.SelectMenuComponent || !chat.ValidActionID(data.CustomID) ||
		len(data.Values) != 1 || !chat.ValidChoice(data.Values[0]) || i.Message == nil {
		return "", false
	}
	for _, c := range i.Message.Components {
		row, ok := c.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, rc := range row.Components {
			sel, ok := rc.(*discordgo.SelectMenu)
			if !ok || sel.CustomID != data.CustomID {
				continue
			}
			for _, o := range sel.Options {
				if o.Value == data.Values[0] {
					return o.Value, true
				}
			}
		}
	}
	return "", false
}

// onComponent answers a click on one of the bot's buttons at once, on a
// goroutine of its own: a deferred update (the message stays as it is; the
// bridge edits it), or, for someone discord.allowed_users/allowed_roles
// leave out, an ephemeral note, and the handler never hears of it. An
// allowed click is queued for the worker as the command it stands for.
func (r *runner) onComponent(i *discordgo.Interaction, kind channelKind) {
	data := i.MessageComponentData()
	ev := &interactionEvent{i: i, kind: kind, click: data.CustomID, answered: make(chan struct{})}
	ev.resp = answer{kind: deferUpdate}
	ours := data.ComponentType == discordgo.ButtonComponent && chat.ValidActionID(data.CustomID)
	if choice, ok := choiceOf(i, data); ok {
		ours, ev.choice = true, choice
	}
	switch {
	case !r.a.allowed(interactionAuthor(i)):
		ev.resp = answer{kind: replyEphemeral, text: notAllowedText}
	case !ours:
		// Not a button of this bot's (an older version's, say): answered,
		// so the person sees no failure, and dropped.
		ev.click = ""
	}
	r.answers.Go(func() {
		defer close(ev.answered)
		ev.err = r.a.answer(r.ctx, i, ev.resp)
	})
	if ev.resp.kind != replyEphemeral && ev.click != "" {
		r.q.Add(ev)
	}
}

// click delivers an answered click as its command's input. Its interaction is
// held for Whisper: the note goes out as an ephemeral followup (@original is
// the bot's own message, which must not change).
func (r *runner) click(ctx context.Context, ev *interactionEvent) {
	i := ev.i
	if ev.err != nil {
		r.a.log.Warn("button click could not be answered", "interaction", i.ID, "err", ev.err)
		return
	}
	kind := ev.kind
	if kind == kindUnknown {
		kind = r.a.channelKind(ctx, i.ChannelID, i.GuildID)
	}
	if !kind.conversation() {
		return // the bot's buttons are only on messages of its conversations
	}
	author := interactionAuthor(i)
	r.a.rememberName(author.ID, author.Name)
	r.a.held.add(i, i.ChannelID, author.ID, false)
	text := chat.ActionText(ev.click)
	if ev.choice != "" {
		text = chat.ChoiceText(ev.click, ev.choice)
	}
	in := chat.Inbound{
		Thread: conversationRef(i, kind), EventID: i.ID, Author: author, Text: text,
		DM: kind == kindDM, Time: snowflakeTime(i.ID),
	}
	if _, err := r.receive(ctx, in); err != nil {
		r.a.log.Error("button click lost: the handler did not take it", "thread", in.Thread.Key(), "action", ev.click, "err", err)
	}
}

// interactionChannelKind is the kind of an interaction's channel: from the
// channel object it carries (since 2023; discordgo v0.29 does not decode
// it), else what the adapter knows.
func (a *Adapter) interactionChannelKind(raw json.RawMessage, i *discordgo.Interaction) channelKind {
	var withChannel struct {
		Channel *struct {
			Type discordgo.ChannelType `json:"type"`
		} `json:"channel"`
	}
	if json.Unmarshal(raw, &withChannel) == nil && withChannel.Channel != nil {
		kind := kindOf(withChannel.Channel.Type)
		a.kinds.Store(i.ChannelID, kind)
		return kind
	}
	return a.knownKind(i.ChannelID, i.GuildID)
}
