package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/threadsmith/threadsmith/chat"
)

// maxHistory caps the earlier messages History returns (the most recent ones).
const maxHistory = 500

// History returns what people wrote in the thread before beforeID, oldest
// first, with their names: the context for a first mention inside an existing
// conversation. Bots (this one included) and non-input subtypes are left out.
// Texts are plain text, like chat.Inbound.Text.
func (a *Adapter) History(ctx context.Context, thread chat.ThreadRef, beforeID string) ([]chat.HistoryMessage, error) {
	id, err := a.identity(ctx)
	if err != nil {
		return nil, err
	}
	params := &slackapi.GetConversationRepliesParameters{
		ChannelID: thread.Channel, Timestamp: thread.Thread, Latest: beforeID, Limit: repliesPage,
	}
	var msgs []message
	for {
		page, hasMore, next, err := a.api.GetConversationRepliesContext(ctx, params)
		if err != nil {
			return nil, apiError("conversations.replies", err)
		}
		for _, p := range page {
			m := fromMsg(thread.Channel, p.Msg)
			// The root comes first whatever the window.
			if (beforeID != "" && !tsAfter(beforeID, m.TS)) || !m.isInput(id) {
				continue
			}
			msgs = append(msgs, m)
		}
		if !hasMore || next == "" {
			break
		}
		params.Cursor = next
	}
	if len(msgs) > maxHistory {
		msgs = msgs[len(msgs)-maxHistory:]
	}
	out := make([]chat.HistoryMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, chat.HistoryMessage{Author: a.users.author(ctx, m.User), Text: a.plain(ctx, m.Text), Time: tsTime(m.TS)})
	}
	return out, nil
}

// Download streams a shared file's url_private with the bot token. The token
// goes only to Slack's own https hosts or to the configured API host (a proxy,
// a GovSlack host, a test), never to a URL someone else chose. The caller
// closes the body and caps what it reads.
func (a *Adapter) Download(ctx context.Context, fileURL string) (io.ReadCloser, error) {
	u, err := url.Parse(fileURL)
	if err != nil {
		return nil, fmt.Errorf("slack: download: bad url: %w", err)
	}
	if !a.mayReceiveToken(u) {
		return nil, fmt.Errorf("slack: download: refusing to send the bot token to %s", u.Host)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("slack: download: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.BotToken)
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack: download: %w", errors.Unwrap(err)) // the url.Error would repeat the URL
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			return nil, fmt.Errorf("slack: download: %w", &chat.RateLimitError{RetryAfter: defaultRetryAfter})
		}
		return nil, fmt.Errorf("slack: download: %s", resp.Status)
	}
	// Without access, Slack's file host redirects to the workspace's sign-in
	// page, which must not be taken for the file.
	if final := resp.Request.URL; final.String() != u.String() {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		if ct == "text/html" || final.Query().Get("redir") != "" {
			resp.Body.Close()
			return nil, errors.New("slack: download: redirected to the sign-in page; the bot cannot read this file (files:read scope, or not shared where the bot is)")
		}
	}
	return resp.Body, nil
}

// mayReceiveToken says whether u is an https Slack host or the API's own host.
func (a *Adapter) mayReceiveToken(u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	if u.Scheme == "https" && slices.ContainsFunc([]string{"slack.com", "slack-gov.com"}, func(d string) bool {
		return host == d || strings.HasSuffix(host, "."+d)
	}) {
		return true
	}
	api, err := url.Parse(a.cfg.baseURL())
	return err == nil && api.Host != "" && u.Scheme == api.Scheme && strings.EqualFold(u.Host, api.Host)
}

// Permalink implements chat.Linker: the link to the thread's root message.
func (a *Adapter) Permalink(ctx context.Context, thread chat.ThreadRef) (string, error) {
	return a.api.GetPermalinkContext(ctx, &slackapi.PermalinkParameters{Channel: thread.Channel, Ts: thread.Thread})
}
