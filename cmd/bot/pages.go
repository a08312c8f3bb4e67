package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

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
		PushDiff:   ws.CommitDiff,
		FullOutput: scratchFile(filepath.Join(cfg.DataDir, "scratch")),
		Logger:     log.With("component", "pages"),
	})
}

// scratchFile opens a file under root (the workspaces' scratch folders,
// where bash keeps a command's whole output): the pages open a path a tool
// result names, and never one outside root, through a symlink either.
func scratchFile(root string) func(path string) (*os.File, error) {
	return func(path string) (*os.File, error) {
		absRoot, err := filepath.Abs(root)
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(absRoot, abs)
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("%s is not in %s", path, absRoot)
		}
		return os.OpenInRoot(absRoot, rel)
	}
}

// pageLink is the bridge's link to a thread's session page: "" unless the
// pages are on and have a public address.
func (m *Main) pageLink(threadID int64) string {
	if m.pages == nil {
		return ""
	}
	return m.pages.Link(threadID)
}
