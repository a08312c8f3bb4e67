package discord

import (
	"sync"

	"github.com/threadsmith/threadsmith/internal/bounded"
)

// conversationMemory is how many channels' facts (kinds, requesters) the
// adapter keeps: every Discord thread is a channel, so these would otherwise
// grow with every thread served.
const conversationMemory = 10000

// recent is what the adapter remembers per channel, for the channels seen
// last: a forgotten kind is asked of discordgo's state or the API again, a
// forgotten requester is noted again with the channel's next input (until
// then the bot's messages there ping nobody).
type recent[V any] struct {
	mu sync.Mutex
	m  bounded.Map[string, V]
}

func newRecent[V any](size int) *recent[V] {
	return &recent[V]{m: bounded.New[string, V](size)}
}

func (r *recent[V]) Load(channelID string) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.Get(channelID)
}

func (r *recent[V]) Store(channelID string, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m.Put(channelID, v)
}

func (r *recent[V]) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m.Len()
}
