package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
)

// The repository's remote is served over git's smart HTTP through a TCP
// proxy. While the proxy refuses connections two runs commit a file each:
// their answers are posted all the same, the commits are kept, and the
// thread hears that the push failed; once the remote is back, the next run's
// push carries every commit. It logs the figures: answers' delay, failure
// notices, whether the kept commits went out before the next run.
func TestGitRemoteDownThenBack(t *testing.T) {
	var proxy *netfault.Proxy
	e := newDiscordEnv(t, func(cfg *config.Config, e *discordEnv) {
		srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{})
		url := srv.Serve(t, e.remote)
		proxy = netfault.New(t, netfault.HostPort(url))
		cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: proxy.URL(url), DefaultBranch: "main"}}
	})
	fake := e.fake
	n := 0
	e.scripts.add("mike", func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply(fmt.Sprintf("wrote f%d", n))
		}
		n++
		return llmfake.ToolCallReply(llmfake.Call{ID: "w" + itoa(n), Name: "write", Args: `{"path":"f` + itoa(n) + `.txt","content":"x\n"}`})
	})
	th, _ := e.open("mike: add a file")
	e.waitBot(th, "wrote f1")
	e.waitBot(th, "f1.txt")
	branch := discordBranch(th)

	proxy.Down()
	var answered []time.Duration
	for i, text := range []string{"mike: another", "mike: and another"} {
		at := time.Now()
		fake.UserMessage(th, dAlice, text)
		e.waitBot(th, fmt.Sprintf("wrote f%d", i+2))
		answered = append(answered, time.Since(at))
		e.waitBotCount(th, "Pushing `"+branch+"` failed", i+1)
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	// Nothing pushes by itself when the remote is back: the kept commits
	// wait for the next run.
	pushedAlone := slices.Contains(fileNames(e.remote.Files(t, branch)), "f3.txt")
	at := time.Now()
	fake.UserMessage(th, dAlice, "mike: one more")
	e.waitBot(th, "wrote f4")
	baseline := time.Since(at)
	if err := waitFor(e, "the branch on the remote with every file", func() bool {
		names := fileNames(e.remote.Files(t, branch))
		return slices.Contains(names, "f2.txt") && slices.Contains(names, "f3.txt") && slices.Contains(names, "f4.txt")
	}); err != nil {
		t.Fatalf("%v: the remote's branch has %v", err, fileNames(e.remote.Files(t, branch)))
	}
	failed := e.countBot(th, "failed")
	if failed != 2 {
		t.Errorf("%d push failure notices for 2 runs while the remote was down, want one each", failed)
	}
	for i, d := range answered {
		// An answer is posted before the push: not held by a remote that
		// refuses (nor by one that hangs: the push runs after it).
		if d > 30*time.Second {
			t.Errorf("answer %d came %s after its message", i+2, d)
		}
	}
	t.Logf("FIGURE git: 2 runs while the remote refused: answered after %v (with the remote back: %s); %d push failure notices; kept commits pushed before the next run: %v; after it, the remote has %s",
		roundAll(answered), baseline.Round(time.Millisecond), failed, pushedAlone, strings.Join(fileNames(e.remote.Files(t, branch)), " "))
}

func fileNames(files map[string]string) []string {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
