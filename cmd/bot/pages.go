package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/safefile"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/web"
	"github.com/threadsmith/threadsmith/workspace"
)

// sessionPages builds the session pages served on http.listen, or nil when
// they are off: without http.listen, or with neither a key to check links
// nor an authenticating proxy's header (nobody could open them).
func sessionPages(cfg *config.Config, db web.Store, ws *workspace.Manager, log *slog.Logger) *web.Server {
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
		FullOutput: scratchFile(cfg.DataDir, cfg.Workspace.BranchPrefix),
		Logger:     log.With("component", "pages"),
	})
}

// scratchFile opens a file in a thread's own scratch folder
// (<data_dir>/scratch/<repo>/<branch without the prefix>, where bash keeps a
// command's whole output): the pages open a path a tool result names, and
// never one outside that folder, through a symlink either, nor another
// thread's.
func scratchFile(dataDir, branchPrefix string) func(th storage.Thread, path string) (*os.File, error) {
	return func(th storage.Thread, path string) (*os.File, error) {
		id, ok := strings.CutPrefix(th.Branch, branchPrefix)
		if !ok || !oneName(id) || !oneName(th.Repo) {
			return nil, fmt.Errorf("thread %d (%s on %s) has no scratch folder of its own", th.ID, th.Repo, th.Branch)
		}
		root, err := filepath.Abs(filepath.Join(dataDir, "scratch", th.Repo, id))
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || !filepath.IsLocal(rel) {
			return nil, fmt.Errorf("%s is not in %s", path, root)
		}
		return openRegular(root, rel)
	}
}

// openRegular opens rel under root for reading if it is a regular file,
// through safefile: the agent writes in its scratch folder, so no link there
// is followed (in the folder or out of it), and a named pipe put where an
// output was is refused without waiting (a page's goroutine never blocks).
// Pages are read 256 KB at a time, so the file's size needs no cap here.
func openRegular(root, rel string) (*os.File, error) {
	r, err := safefile.OpenRoot(root, "the scratch folder")
	if err != nil {
		return nil, err
	}
	defer r.Close()
	f, _, err := r.Open(filepath.ToSlash(rel))
	return f, err
}

// oneName reports whether s is one file name: not empty, no separator, not
// "." or "..".
func oneName(s string) bool {
	return s != "" && filepath.IsLocal(s) && !strings.ContainsAny(s, `/\`)
}

// pageLink is the bridge's link to a thread's session page: "" unless the
// pages are on and have a public address.
func (m *Main) pageLink(threadID int64) string {
	if m.pages == nil {
		return ""
	}
	return m.pages.Link(threadID)
}
