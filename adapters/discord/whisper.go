package discord

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// tokenLife is how long the adapter uses an interaction token: Discord's 15
// minutes, less a margin.
const tokenLife = 14 * time.Minute

// heldInteraction is an interaction whose token still works, for Whisper.
type heldInteraction struct {
	i         *discordgo.Interaction
	channel   string
	user      string
	ephemeral bool
	// given says @original has its final content; Whisper then uses a followup.
	given bool
	at    time.Time
}

// heldInteractions are the recent interactions, newest last.
type heldInteractions struct {
	mu   sync.Mutex
	list []*heldInteraction
}

// add holds an answered interaction. A public answer counts as given: its
// content is set before anything could whisper.
func (h *heldInteractions) add(i *discordgo.Interaction, channel, user string, ephemeral bool) *heldInteraction {
	x := &heldInteraction{i: i, channel: channel, user: user, ephemeral: ephemeral, given: !ephemeral, at: snowflakeTime(i.ID)}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list = slices.DeleteFunc(h.list, func(o *heldInteraction) bool { return time.Since(o.at) > tokenLife })
	h.list = append(h.list, x)
	return x
}

// latest is the newest live interaction of user in channel, or nil.
func (h *heldInteractions) latest(channel, user string) *heldInteraction {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range slices.Backward(h.list) {
		if x.channel == channel && x.user == user && time.Since(x.at) <= tokenLife {
			return x
		}
	}
	return nil
}

// claim marks x's @original as given; it reports whether it was not yet.
func (h *heldInteractions) claim(x *heldInteraction) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if x.given {
		return false
	}
	x.given = true
	return true
}

// Whisper implements chat.Whisperer. Through the user's latest live
// interaction in the channel, the note is ephemeral (the ephemeral answer
// itself if it was not given yet, else an ephemeral followup). Without one,
// it is a direct message, saying where it comes from: a note in the channel
// would name the person in front of everyone. If they take no direct
// messages, a ⛔ on their message is the answer.
func (a *Adapter) Whisper(ctx context.Context, to chat.Inbound, text string) error {
	thread, userID := to.Thread, to.Author.ID
	text = truncateRunes(text, MaxMessageChars-100)
	if x := a.held.latest(thread.Channel, userID); x != nil {
		if x.ephemeral && a.held.claim(x) {
			_, err := a.editOriginal(ctx, x.i, text)
			return err
		}
		_, err := a.s.FollowupMessageCreate(x.i, true, &discordgo.WebhookParams{
			Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: &discordgo.MessageAllowedMentions{},
		}, ownCall(ctx)...)
		if err == nil {
			return nil
		}
		a.log.Warn("ephemeral note failed; sending a direct message", "thread", thread.Key(), "err", restError("followup", err, nil))
	}
	noMentions := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	if thread.Team == "" {
		// Already a direct conversation: the note is for the one person in it.
		_, err := a.s.ChannelMessageSendComplex(thread.Channel, &discordgo.MessageSend{Content: text, AllowedMentions: noMentions}, ownCall(ctx)...)
		return restError("whisper", err, nil)
	}
	dm, err := a.s.UserChannelCreate(userID, ownCall(ctx)...)
	if err == nil {
		// <#id> links the thread; it pings nobody.
		note := "About your message in <#" + thread.Channel + ">: " + text
		_, err = a.s.ChannelMessageSendComplex(dm.ID, &discordgo.MessageSend{Content: note, AllowedMentions: noMentions}, ownCall(ctx)...)
	}
	if err == nil {
		return nil
	}
	a.log.Info("the person takes no direct messages; reacting on their message instead", "thread", thread.Key(), "err", restError("direct message", err, nil))
	if to.MessageID == "" {
		return restError("direct message", err, nil)
	}
	return a.React(ctx, thread, to.MessageID, "no_entry", true)
}
