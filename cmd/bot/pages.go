package main

import (
	"log/slog"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/web"
	"github.com/threadsmith/threadsmith/workspace"
)

// sessionPages builds the session pages served on http.listen, or nil when
// they are off: without http.listen, or with neither a key to check links
// nor an authenticating proxy's header (nobody could open them).
func sessionPages(cfg *config.Config, db storage.PageStore, ws *workspace.Manager, log *slog.Logger) *web.Server {
	h := cfg.HTTP
	if h.Listen == "" || (h.SessionKey == "" && h.AuthHeader == "") {
		return nil
	}
	return web.New(web.Options{
		Store:      db,
		Key:        []byte(h.SessionKey),
		TTL:        h.LinkTTL,
		AuthHeader: h.AuthHeader,
		PublicURL:  h.PublicURL,
		Secrets:    secrets(cfg),
		CompareURL: func(repo, branch string) string {
			r, ok := cfg.Workspace.Repo(repo)
			if !ok {
				return ""
			}
			return workspace.CompareURL(r.URL, r.Forge, r.DefaultBranch, branch)
		},
		PushDiff: ws.CommitDiff,
		Logger:   log.With("component", "pages"),
	})
}

// pageLink is the bridge's link to a thread's session page: "" unless the
// pages are on and have a public address.
func (m *Main) pageLink(threadID int64) string {
	if m.pages == nil {
		return ""
	}
	return m.pages.Link(threadID)
}
