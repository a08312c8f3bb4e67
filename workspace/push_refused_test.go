package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
)

// A push the remote refuses is reported as refused, with the
// remote's own words, not as "the remote could not be reached"; the commit
// stays for the next push.
func TestPushRefusedByTheRemoteSaysWhy(t *testing.T) {
	t.Parallel()
	for name, refuse := range map[string]func(t *testing.T, r *gitremote.Repo){
		"hook": func(t *testing.T, r *gitremote.Repo) {
			hook := "#!/bin/sh\necho 'GH006: Protected branch update failed.' >&2\nexit 1\n"
			if err := os.WriteFile(filepath.Join(r.Path, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
				t.Fatal(err)
			}
		},
		"size limit": func(t *testing.T, r *gitremote.Repo) {
			gitremote.Git(t, r.Path, "config", "receive.maxInputSize", "10")
		},
	} {
		t.Run(name, func(t *testing.T) {
			remote := gitremote.NewBare(t, gitremote.Options{Files: seedFiles()})
			e := newEnv(t, Repo{Name: "app", URL: remote.Path})
			w := e.open("app", "refused")
			writeFile(t, w.Root(), "a.txt", "bot run\n")
			sha := mustCommit(t, w, "run")
			refuse(t, remote)

			_, err := w.Push(context.Background())
			msg := ErrorMessage(err)
			if !errors.Is(err, ErrPushRejected) || strings.Contains(msg, "could not be reached") {
				t.Fatalf("Push refused by the remote: code %s, message %q; want push_rejected", ErrorCode(err), msg)
			}
			want := map[string]string{"hook": "GH006: Protected branch update failed.", "size limit": "pack exceeds maximum allowed size"}[name]
			if !strings.Contains(msg, want) || !strings.Contains(msg, sha[:7]) {
				t.Errorf("message = %q, want the remote's words %q and the kept commit %s", msg, want, sha[:7])
			}
			if strings.Contains(msg, remote.Path) || strings.Contains(msg, e.m.cfg.DataDir) {
				t.Errorf("message = %q names a path on the bot's disk", msg)
			}
			if n, err := w.Unpushed(context.Background()); err != nil || n != 1 {
				t.Errorf("Unpushed = %d, %v; want the commit kept for the next push", n, err)
			}
		})
	}
}
