package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// Texts of the adapter's own answers.
const (
	notAllowedText  = "Sorry, you're not allowed to use this bot here. Ask an admin to add you."
	unknownCmdText  = "I don't know that command. Try `/help`."
	codeWhereText   = "Use `/code` in a text channel to start a session, or in a session thread to add to it."
	noSessionText   = "There's no session here: start one with `/code` in a channel."
	doneText        = "✓"
	failedInputText = "⚠️ That didn't go through (an internal error). Please try again."
)

// threadArchiveMinutes is how long a session thread stays open without
// activity: a week, Discord's longest.
const threadArchiveMinutes = 10080

// answerKind is how an interaction is answered within Discord's 3 seconds.
type answerKind int

const (
	deferPublic    answerKind = iota // "thinking…", then @original is edited
	deferEphemeral                   // the same, seen only by the user
	replyEphemeral                   // a final ephemeral answer; nothing else happens
	deferUpdate                      // a click: the message stays as it is
)

type answer struct {
	kind answerKind
	text string // replyEphemeral
}

// onInteraction starts answering an application command at once, on a
// goroutine of its own, and queues the rest for the worker.
func (r *runner) onInteraction(raw json.RawMessage) {
	i := new(discordgo.Interaction)
	if err := json.Unmarshal(raw, i); err != nil {
		r.a.log.Warn("undecodable INTERACTION_CREATE", "err", err)
		return
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
	case discordgo.InteractionMessageComponent:
		r.onComponent(i, r.a.interactionChannelKind(raw, i))
		return
	default:
		return
	}
	kind := r.a.interactionChannelKind(raw, i)
	ev := &interactionEvent{
		i:        i,
		cmd:      r.a.lookupCommand(i.ApplicationCommandData().Name),
		kind:     kind,
		answered: make(chan struct{}),
	}
	ev.resp = r.a.plan(i, ev.cmd, kind)
	if ev.resp.kind == deferPublic && ev.cmd.name == cmdCode && kind == kindText {
		// A repository the channel may not open is refused before anything
		// public is shown (Describe does no I/O).
		opts := commandOptions(i)
		_, _, err := r.h.Describe(chat.Inbound{
			Thread: chat.ThreadRef{Platform: Platform, Team: i.GuildID, Channel: i.ID, Thread: i.ID},
			Author: interactionAuthor(i), Text: opts["prompt"], Mention: true,
			Repo: strings.TrimSpace(opts["repo"]), Parent: i.ChannelID,
		})
		if na := (*chat.NotAllowedError)(nil); errors.As(err, &na) {
			ev.resp = answer{kind: replyEphemeral, text: na.Note}
		}
	}
	r.answers.Go(func() {
		defer close(ev.answered)
		ev.err = r.a.answer(r.ctx, i, ev.resp)
	})
	if ev.resp.kind != replyEphemeral {
		r.q.Add(ev)
	}
}

// plan decides the first answer from what is known without I/O.
func (a *Adapter) plan(i *discordgo.Interaction, cmd *command, kind channelKind) answer {
	author := interactionAuthor(i)
	switch {
	case cmd == nil:
		return answer{kind: replyEphemeral, text: unknownCmdText}
	case !a.allowed(author):
		return answer{kind: replyEphemeral, text: notAllowedText}
	case cmd.name == cmdCode && kind == kindOther:
		return answer{kind: replyEphemeral, text: codeWhereText}
	case cmd.name == cmdCode:
		return answer{kind: deferPublic}
	case kind == kindText || kind == kindOther:
		if cmd.name == cmdHelp {
			return answer{kind: replyEphemeral, text: a.helpText()}
		}
		return answer{kind: replyEphemeral, text: "`/" + cmd.name + "` works inside a session thread. " + noSessionText}
	case cmd.echo:
		return answer{kind: deferPublic}
	}
	return answer{kind: deferEphemeral}
}

// allowed applies discord.allowed_users and discord.allowed_roles (both empty:
// everyone), as the bridge does for messages.
func (a *Adapter) allowed(au chat.Author) bool {
	if len(a.cfg.AllowedUsers) == 0 && len(a.cfg.AllowedRoles) == 0 {
		return true
	}
	if slices.Contains(a.cfg.AllowedUsers, au.ID) {
		return true
	}
	return slices.ContainsFunc(au.Roles, func(r string) bool { return slices.Contains(a.cfg.AllowedRoles, r) })
}

// answer sends an interaction's first answer.
func (a *Adapter) answer(ctx context.Context, i *discordgo.Interaction, ans answer) error {
	resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}
	switch ans.kind {
	case deferUpdate:
		resp.Type = discordgo.InteractionResponseDeferredMessageUpdate
	case deferEphemeral:
		resp.Data = &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral}
	case replyEphemeral:
		resp.Type = discordgo.InteractionResponseChannelMessageWithSource
		resp.Data = &discordgo.InteractionResponseData{
			Content: truncateRunes(ans.text, MaxMessageChars), Flags: discordgo.MessageFlagsEphemeral,
			AllowedMentions: &discordgo.MessageAllowedMentions{},
		}
	}
	err := a.s.InteractionRespond(i, resp, ownCall(ctx)...)
	return restError("answer interaction", err, nil)
}

// interaction continues an answered interaction on the worker.
func (r *runner) interaction(ctx context.Context, ev *interactionEvent) {
	select {
	case <-ev.answered:
	case <-ctx.Done():
		return
	}
	if ev.click != "" {
		r.click(ctx, ev)
		return
	}
	i := ev.i
	if ev.err != nil {
		r.a.log.Warn("interaction could not be answered", "command", ev.cmd.name, "interaction", i.ID, "err", ev.err)
		return
	}
	kind := ev.kind
	if kind == kindUnknown {
		kind = r.a.channelKind(ctx, i.ChannelID, i.GuildID)
	}
	opts := commandOptions(i)
	switch {
	case ev.cmd.name == cmdCode && kind == kindText:
		r.startSession(ctx, i, opts)
	case !kind.conversation():
		text := codeWhereText
		if ev.cmd.name != cmdCode {
			text = noSessionText
		}
		r.a.editOriginal(ctx, i, text)
	case ev.cmd.echo:
		r.echoInput(ctx, i, ev.cmd, kind, opts)
	default:
		r.ephemeralCommand(ctx, i, ev.cmd, kind, opts)
	}
}

// startSession is /code in a text channel: @original becomes the starter
// message, a thread is opened on it, and the prompt goes to the handler as a
// mention in that thread.
func (r *runner) startSession(ctx context.Context, i *discordgo.Interaction, opts map[string]string) {
	a := r.a
	author := interactionAuthor(i)
	a.rememberName(author.ID, author.Name)
	prompt := strings.TrimSpace(opts["prompt"])
	repo := strings.TrimSpace(opts["repo"])
	orig, err := a.editOriginal(ctx, i, starterText(author.ID, prompt, repo, ""))
	if err != nil {
		a.log.Warn("/code: could not write the starter message", "interaction", i.ID, "err", err)
		return
	}
	// A thread started from a message takes the message's id, so the session
	// (and its branch) is known before the thread exists.
	ref := chat.ThreadRef{Platform: Platform, Team: i.GuildID, Channel: orig.ID, Thread: orig.ID}
	in := chat.Inbound{
		Thread: ref, EventID: i.ID, Author: author, Text: prompt, Mention: true, Repo: repo,
		Parent: i.ChannelID, Time: snowflakeTime(i.ID),
	}
	repoName, branch, err := r.h.Describe(in)
	if na := (*chat.NotAllowedError)(nil); errors.As(err, &na) {
		// The refusal is for the person alone: the public starter goes.
		a.refuseOriginal(ctx, i, na.Note)
		return
	}
	if err != nil {
		a.editOriginal(ctx, i, "⚠️ "+err.Error()+"\n"+quote(truncateRunes(prompt, 1500)))
		return
	}
	if _, err := a.editOriginal(ctx, i, starterText(author.ID, prompt, repoName, branch)); err != nil {
		a.log.Warn("/code: could not complete the starter message", "interaction", i.ID, "err", err)
	}
	th, err := a.startThread(ctx, i.ChannelID, orig.ID, threadName(prompt))
	if err != nil {
		a.log.Error("/code: could not open a thread", "channel", i.ChannelID, "err", restError("start thread", err, nil))
		a.editOriginal(ctx, i, "⚠️ I couldn't open a thread here: I need the Create Public Threads and "+
			"Send Messages in Threads permissions in this channel.\n"+quote(truncateRunes(prompt, 1500)))
		return
	}
	if th.ID != ref.Channel {
		a.log.Warn("/code: the thread did not take its starter message's id", "thread", th.ID, "message", orig.ID)
		ref.Channel, ref.Thread = th.ID, th.ID
	}
	a.kinds.Store(th.ID, kindThread)
	// Not held for Whisper: its followups would land in the parent channel.
	in.Thread = ref
	if _, err := r.receive(ctx, in); err != nil {
		r.failNote(ctx, ref, "this request", err)
	}
}

// echoInput is /code in a session's conversation, /steer and /followup: the
// public answer shows what was asked and carries the acknowledgement
// reactions.
func (r *runner) echoInput(ctx context.Context, i *discordgo.Interaction, cmd *command, kind channelKind, opts map[string]string) {
	a := r.a
	author := interactionAuthor(i)
	a.rememberName(author.ID, author.Name)
	shown := opts["prompt"]
	if cmd.name != cmdCode {
		shown = opts["text"]
	}
	echo := "**/" + cmd.name + "**\n" + quote(truncateRunes(strings.TrimSpace(shown), 1800))
	ref := conversationRef(i, kind)
	in := chat.Inbound{
		Thread: ref, EventID: i.ID, Author: author, Text: cmd.text(opts), DM: kind == kindDM,
		Mention: cmd.name == cmdCode, Time: snowflakeTime(i.ID),
	}
	if cmd.name == cmdCode {
		in.Repo = strings.TrimSpace(opts["repo"])
		if kind != kindDM {
			in.Parent = a.ParentChannel(ctx, ref)
		}
	}
	if orig, err := a.editOriginal(ctx, i, echo); err != nil {
		a.log.Warn("could not show the command's input", "interaction", i.ID, "err", err)
	} else {
		in.MessageID = orig.ID
	}
	a.held.add(i, i.ChannelID, author.ID, false)
	rc, err := r.receive(ctx, in)
	switch {
	case err != nil:
		r.failNote(ctx, ref, "that", err)
	case rc == chat.Ignored && cmd.name != cmdCode:
		a.editOriginal(ctx, i, echo+"\n-# "+noSessionText)
	}
}

// ephemeralCommand is every other command in a conversation: it becomes the
// bridge's text command, and the user alone sees how it went.
func (r *runner) ephemeralCommand(ctx context.Context, i *discordgo.Interaction, cmd *command, kind channelKind, opts map[string]string) {
	a := r.a
	author := interactionAuthor(i)
	a.rememberName(author.ID, author.Name)
	ref := conversationRef(i, kind)
	h := a.held.add(i, i.ChannelID, author.ID, true)
	rc, err := r.receive(ctx, chat.Inbound{
		Thread: ref, EventID: i.ID, Author: author, Text: cmd.text(opts), DM: kind == kindDM,
		Time: snowflakeTime(i.ID),
	})
	var text string
	switch {
	case err != nil:
		a.log.Error("command lost: the handler did not take it", "thread", ref.Key(), "command", cmd.name, "err", err)
		text = failedInputText
	case rc == chat.Ignored && cmd.name == cmdHelp:
		text = a.helpText()
	case rc == chat.Ignored:
		text = noSessionText
	case rc == chat.Refused:
		text = notAllowedText // unless the handler's Whisper answered already
	default:
		text = doneText
	}
	if a.held.claim(h) {
		a.editOriginal(ctx, i, text)
	}
}

// editOriginal replaces the interaction's response (@original). Mentions in
// it never ping.
func (a *Adapter) editOriginal(ctx context.Context, i *discordgo.Interaction, text string) (*discordgo.Message, error) {
	text = truncateRunes(text, MaxMessageChars)
	m, err := a.s.InteractionResponseEdit(i, &discordgo.WebhookEdit{
		Content: &text, AllowedMentions: &discordgo.MessageAllowedMentions{},
	}, ownCall(ctx)...)
	if err != nil {
		err = restError("edit the interaction response", err, nil)
		a.log.Warn("interaction response not edited", "interaction", i.ID, "err", err)
		return nil, err
	}
	return m, nil
}

// refuseOriginal replaces a public @original with a note only the user sees:
// the public answer is deleted and the note follows as an ephemeral message.
func (a *Adapter) refuseOriginal(ctx context.Context, i *discordgo.Interaction, note string) {
	if err := a.s.InteractionResponseDelete(i, ownCall(ctx)...); err != nil {
		a.log.Warn("interaction response not deleted", "interaction", i.ID, "err", restError("delete the interaction response", err, nil))
	}
	_, err := a.s.FollowupMessageCreate(i, false, &discordgo.WebhookParams{
		Content: truncateRunes(note, MaxMessageChars), Flags: discordgo.MessageFlagsEphemeral,
		AllowedMentions: &discordgo.MessageAllowedMentions{},
	}, ownCall(ctx)...)
	if err != nil {
		a.log.Warn("refusal note not sent", "interaction", i.ID, "err", restError("send a followup", err, nil))
	}
}

// conversationRef is the ThreadRef of a thread or DM channel.
func conversationRef(i *discordgo.Interaction, kind channelKind) chat.ThreadRef {
	team := i.GuildID
	if kind == kindDM {
		team = ""
	}
	return chat.ThreadRef{Platform: Platform, Team: team, Channel: i.ChannelID, Thread: i.ChannelID}
}

// commandOptions returns a command's string options by name.
func commandOptions(i *discordgo.Interaction) map[string]string {
	out := map[string]string{}
	for _, o := range i.ApplicationCommandData().Options {
		if s, ok := o.Value.(string); ok {
			out[o.Name] = s
		} else if o.Value != nil {
			out[o.Name] = fmt.Sprint(o.Value)
		}
	}
	return out
}

// interactionAuthor is who ran the command: the guild member, or the user in DMs.
func interactionAuthor(i *discordgo.Interaction) chat.Author {
	if i.Member != nil && i.Member.User != nil {
		return chat.Author{ID: i.Member.User.ID, Name: displayName(i.Member.User, i.Member), Roles: slices.Clone(i.Member.Roles)}
	}
	if i.User != nil {
		return chat.Author{ID: i.User.ID, Name: displayName(i.User, nil)}
	}
	return chat.Author{}
}

// displayName is a member's nickname, else the user's display name, else the
// username.
func displayName(u *discordgo.User, m *discordgo.Member) string {
	if m != nil && m.Nick != "" {
		return m.Nick
	}
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}

// snowflakeTime is when a Discord id was made; zero for a malformed id.
func snowflakeTime(id string) time.Time {
	t, err := discordgo.SnowflakeTimestamp(id)
	if err != nil {
		return time.Time{}
	}
	return t
}
