package discord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

var (
	_ chat.Opener     = (*Adapter)(nil)
	_ chat.OnceOpener = (*Adapter)(nil)
)

// Open implements chat.Opener: text is posted in the channel, pinging
// nobody, and a thread is started from it, named after its first line; the
// thread takes the message's id.
func (a *Adapter) Open(ctx context.Context, channel, text string) (chat.ThreadRef, error) {
	return a.OpenOnce(ctx, channel, text, chat.PostKey{})
}

// OpenOnce implements chat.OnceOpener. The message carries key.ID as its
// nonce with enforce_nonce, so a retry within Discord's nonce window (a few
// minutes) gets the message posted before; a thread started on it already
// is taken as the thread.
func (a *Adapter) OpenOnce(ctx context.Context, channel, text string, key chat.PostKey) (chat.ThreadRef, error) {
	// The message answers nobody, so it pings nobody: not the last person
	// the bot answered in the channel, whom its text (an issue's, a
	// schedule's) may name.
	key.Notify, key.Stream = "", false
	none := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	id, err := a.postOnce(ctx, chat.ThreadRef{Platform: Platform, Channel: channel, Thread: channel}, text, key, none)
	if err != nil {
		return chat.ThreadRef{}, err
	}
	ref := chat.ThreadRef{Platform: Platform, Channel: id, Thread: id}
	th, err := a.startThread(ctx, channel, id, threadName(text))
	var re *discordgo.RESTError
	switch {
	case err == nil:
		ref.Team, ref.Channel, ref.Thread = th.GuildID, th.ID, th.ID
	case errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodeThreadAlreadyCreatedForThisMessage:
		// An earlier attempt started it: a thread takes its message's id.
		if ch, cerr := a.s.Channel(id, ownCall(ctx)...); cerr == nil {
			ref.Team = ch.GuildID
		} else {
			return chat.ThreadRef{}, restError("get thread", cerr, nil)
		}
	default:
		return chat.ThreadRef{}, restError("start thread", err, nil)
	}
	a.kinds.Store(ref.Channel, kindThread)
	return ref, nil
}

// startThread starts a thread on a message of a channel, waiting out rate
// limits. Discord counts the thread starts of a channel in one bucket;
// discordgo's MessageThreadStartComplex names the bucket by the message as
// well, so its limiter would let starts in one channel (several /code at
// once, schedules firing together) run into 429s instead of pacing them.
func (a *Adapter) startThread(ctx context.Context, channel, message, name string) (*discordgo.Channel, error) {
	body, err := a.s.RequestWithBucketID("POST", discordgo.EndpointChannelMessageThread(channel, message),
		&discordgo.ThreadStart{Name: name, AutoArchiveDuration: threadArchiveMinutes},
		discordgo.EndpointChannelMessageThread(channel, ""), ownCall(ctx)...)
	if err != nil {
		return nil, err
	}
	var th discordgo.Channel
	if err := json.Unmarshal(body, &th); err != nil {
		return nil, fmt.Errorf("discord: start thread: %w", err)
	}
	return &th, nil
}
