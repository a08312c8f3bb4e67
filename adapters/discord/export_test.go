package discord

import (
	"time"

	"github.com/bwmarrin/discordgo"
)

// SetReceiveRetry sets the waits between attempts of a failed Receive, so
// that tests of the failure path do not take seconds. Call it before Run.
func SetReceiveRetry(a *Adapter, waits ...time.Duration) { a.receiveRetry = waits }

// AllowedMentionsIn is what the adapter's messages in a channel may ping.
func AllowedMentionsIn(a *Adapter, channelID string) *discordgo.MessageAllowedMentions {
	return a.mentionsIn(channelID)
}

// SetRequester records userID as the one who asked in a channel, as an
// accepted input does.
func SetRequester(a *Adapter, channelID, userID string) { a.requesters.Store(channelID, userID) }

// SetConversationMemory sets how many channels' facts the adapter keeps.
// Call it before the adapter notes any.
func SetConversationMemory(a *Adapter, n int) {
	a.kinds, a.requesters = newRecent[channelKind](n), newRecent[string](n)
}

// RememberedChannels is how many channels' requesters and kinds the adapter
// holds.
func RememberedChannels(a *Adapter) (requesters, kinds int) { return a.requesters.len(), a.kinds.len() }

// ForgetChannel drops a channel from discordgo's state, as for a thread the
// gateway never told the adapter about (archived before it started).
func ForgetChannel(a *Adapter, channelID string) {
	if c, err := a.s.State.Channel(channelID); err == nil {
		_ = a.s.State.ChannelRemove(c)
	}
}
