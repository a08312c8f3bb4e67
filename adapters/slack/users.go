package slack

import (
	"context"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"golang.org/x/sync/singleflight"

	"github.com/threadsmith/threadsmith/chat"
)

// userLookupTimeout bounds a users.info call made on the way to Receive: the
// event's acknowledgement waits for it, so a slow or rate-limited lookup gives
// up and the message goes on with the author's id only.
const userLookupTimeout = time.Second

// failedLookupTTL is how long a failed lookup is not tried again, so a
// rate-limited users.info does not slow every message down.
const failedLookupTTL = 30 * time.Second

// userCache answers users.info from memory for ttl. Concurrent lookups of one
// user share one call.
type userCache struct {
	api *slackapi.Client
	ttl time.Duration
	now func() time.Time

	mu      sync.Mutex
	entries map[string]userEntry
	group   singleflight.Group
}

type userEntry struct {
	author  chat.Author
	expires time.Time
}

func newUserCache(api *slackapi.Client, ttl time.Duration, now func() time.Time) *userCache {
	return &userCache{api: api, ttl: ttl, now: now, entries: map[string]userEntry{}}
}

// author returns who id is: name and email from users.info when Slack answers,
// else just the id (Name empty). It never fails.
func (c *userCache) author(ctx context.Context, id string) chat.Author {
	if id == "" {
		return chat.Author{}
	}
	c.mu.Lock()
	e, ok := c.entries[id]
	c.mu.Unlock()
	if ok && c.now().Before(e.expires) {
		return e.author
	}
	v, _, _ := c.group.Do(id, func() (any, error) {
		lctx, cancel := context.WithTimeout(ctx, userLookupTimeout)
		defer cancel()
		u, err := c.api.GetUserInfoContext(lctx, id)
		a := chat.Author{ID: id}
		ttl := c.ttl
		if err != nil {
			ttl = failedLookupTTL
			if rl := rateLimit(err); rl != nil {
				ttl = max(ttl, rl.RetryAfter)
			}
		} else {
			a.Name = displayName(u)
			a.Email = u.Profile.Email
		}
		if ctx.Err() == nil { // a lookup cut short by shutdown says nothing of the user
			c.mu.Lock()
			c.entries[id] = userEntry{author: a, expires: c.now().Add(ttl)}
			c.mu.Unlock()
		}
		return a, nil
	})
	return v.(chat.Author)
}

// displayName is what people see in Slack: the display name, else the real
// name, else the handle.
func displayName(u *slackapi.User) string {
	switch {
	case u.Profile.DisplayName != "":
		return u.Profile.DisplayName
	case u.Profile.RealName != "":
		return u.Profile.RealName
	case u.RealName != "":
		return u.RealName
	}
	return u.Name
}
