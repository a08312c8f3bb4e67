package slack

import (
	"context"
	"strings"

	"github.com/threadsmith/threadsmith/chat"
)

var (
	_ chat.Opener     = (*Adapter)(nil)
	_ chat.OnceOpener = (*Adapter)(nil)
)

// Open implements chat.Opener: text is posted at the channel's top level,
// and its ts is the root of the thread it starts.
func (a *Adapter) Open(ctx context.Context, channel, text string) (chat.ThreadRef, error) {
	return a.OpenOnce(ctx, channel, text, chat.PostKey{})
}

// OpenOnce implements chat.OnceOpener as PostOnce does for a post: the
// message carries key in its metadata, and a retry first looks for it among
// the channel's top-level messages since key.First.
func (a *Adapter) OpenOnce(ctx context.Context, channel, text string, key chat.PostKey) (chat.ThreadRef, error) {
	id, err := a.identity(ctx)
	if err != nil {
		return chat.ThreadRef{}, err
	}
	ref := chat.ThreadRef{Platform: Platform, Team: id.TeamID, Channel: channel}
	if strings.HasPrefix(channel, "D") {
		ref.Team = "" // chat.ThreadRef: no team for direct conversations
	}
	key.Notify, key.Stream = "", false
	ts, err := a.PostOnce(ctx, ref, text, key)
	if err != nil {
		return chat.ThreadRef{}, err
	}
	ref.Thread = ts
	return ref, nil
}
