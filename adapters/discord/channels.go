package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/threadsmith/threadsmith/chat"
)

// channelKind is what a channel is to the adapter.
type channelKind int

const (
	kindUnknown channelKind = iota
	kindText                // guild text or announcement channel: /code opens threads here
	kindThread              // a thread: a session's conversation
	kindDM                  // a direct conversation with the bot: a session's conversation too
	kindOther               // voice text, forum, stage, …
)

func kindOf(t discordgo.ChannelType) channelKind {
	switch t {
	case discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews:
		return kindText
	case discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread, discordgo.ChannelTypeGuildNewsThread:
		return kindThread
	case discordgo.ChannelTypeDM, discordgo.ChannelTypeGroupDM:
		return kindDM
	}
	return kindOther
}

// conversation reports whether input in the channel can belong to a session.
func (k channelKind) conversation() bool { return k == kindThread || k == kindDM }

// knownKind is a channel's kind as far as it is known without I/O.
func (a *Adapter) knownKind(channelID, guildID string) channelKind {
	if guildID == "" {
		return kindDM
	}
	if k, ok := a.kinds.Load(channelID); ok {
		return k
	}
	st := a.s.State
	if c, err := st.Channel(channelID); err == nil {
		st.RLock()
		t := c.Type
		st.RUnlock()
		return kindOf(t)
	}
	return kindUnknown
}

// channelKind is a channel's kind, asking Discord when it is not known.
func (a *Adapter) channelKind(ctx context.Context, channelID, guildID string) channelKind {
	if k := a.knownKind(channelID, guildID); k != kindUnknown {
		return k
	}
	c, err := a.s.Channel(channelID, ownCall(ctx)...)
	if err != nil {
		a.log.Warn("could not look up a channel", "channel", channelID, "err", restError("get channel", err, nil))
		return kindUnknown
	}
	k := kindOf(c.Type)
	a.kinds.Store(channelID, k)
	return k
}

// ParentChannel is the channel a session thread lives in, which the bot's
// per-channel settings (an MCP server's channels) name: every Discord thread
// is a channel of its own, so ref.Channel is the thread. It asks Discord
// only when discordgo's state does not know the channel; ref.Channel when
// that fails or it is no thread.
func (a *Adapter) ParentChannel(ctx context.Context, ref chat.ThreadRef) string {
	if p, known := a.stateParent(ref.Channel); known {
		return p
	}
	c, err := a.s.Channel(ref.Channel, ownCall(ctx)...)
	if err != nil || !c.IsThread() || c.ParentID == "" {
		return ref.Channel
	}
	return c.ParentID
}

// parentOf is a thread's parent channel if discordgo's state knows it, else
// the channel itself.
func (a *Adapter) parentOf(channelID string) string {
	p, _ := a.stateParent(channelID)
	return p
}

// stateParent is parentOf, and whether discordgo's state knows the channel.
func (a *Adapter) stateParent(channelID string) (parent string, known bool) {
	st := a.s.State
	c, err := st.Channel(channelID)
	if err != nil {
		return channelID, false
	}
	st.RLock()
	defer st.RUnlock()
	if c.IsThread() && c.ParentID != "" {
		return c.ParentID, true
	}
	return channelID, true
}
