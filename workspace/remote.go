package workspace

import (
	"context"
	"os"
	"strings"
	"time"
)

// RemoteBranches lists the branches of r's remote the way the bot's fetches
// and pushes reach it: the git CLI with the same transport, credentials,
// hermetic configuration and timeout (0: Config's default). It is for
// checking a configuration before the bot starts (-check): nothing is left on
// disk, and errors are redacted and coded as a fetch's are.
func RemoteBranches(ctx context.Context, r Repo, timeout time.Duration) ([]string, error) {
	r, err := r.normalize()
	if err != nil {
		return nil, newError(CodeInternal, r.Name, err)
	}
	if timeout <= 0 {
		timeout = defaultGitTimeout
	}
	// git reads no repository of its own here: an empty one, made for the
	// call and removed after, stands in, so that git never discovers one
	// from the working directory.
	dir, err := os.MkdirTemp("", "threadsmith-ls-remote-")
	if err != nil {
		return nil, newError(CodeInternal, r.Name, err)
	}
	defer os.RemoveAll(dir)
	g := &gitRunner{timeout: timeout, repo: r, redact: redactor{r.Token}}
	if _, err := g.run(ctx, gitCall{dir: dir, args: []string{"init", "--quiet", "--bare", dir}}); err != nil {
		return nil, newError(CodeInternal, r.Name, err)
	}
	out, err := g.out(ctx, gitCall{dir: dir, gitDir: dir, commonDir: dir, args: []string{"ls-remote", "--heads", r.URL}, network: true})
	if err != nil {
		return nil, remoteError(r.Name, "fetch from", timeout, err)
	}
	var branches []string
	for _, line := range strings.Split(out, "\n") {
		if _, ref, ok := strings.Cut(line, "\t"); ok {
			if b, ok := strings.CutPrefix(ref, "refs/heads/"); ok {
				branches = append(branches, b)
			}
		}
	}
	return branches, nil
}
