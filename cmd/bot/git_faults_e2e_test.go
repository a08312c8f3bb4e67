package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/netfault"
	"github.com/threadsmith/threadsmith/storage"
)

// The repository's remote is served over git's smart HTTP through a TCP
// proxy. While the proxy refuses connections two runs commit a file each:
// their answers are posted all the same, the commits are kept, and the
// thread hears once that the push failed, however often it is tried again;
// once the remote is back, the kept commits are pushed by themselves,
// without a next run, and the thread hears it. It logs the figures: answers'
// delay, failure notices, time from the remote's return to the push.
func TestGitRemoteDownThenBack(t *testing.T) {
	t.Parallel()
	var proxy *netfault.Proxy
	e := newDiscordEnv(t, func(cfg *config.Config, e *discordEnv) {
		srv := gitremote.NewHTTPServer(t, gitremote.HTTPOptions{})
		url := srv.Serve(t, e.remote)
		proxy = netfault.New(t, netfault.HostPort(url))
		cfg.Workspace.Repos = []config.Repo{{Name: "app", URL: proxy.URL(url), DefaultBranch: "main"}}
		e.pushRetry = 100 * time.Millisecond
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
		if i == 0 {
			e.waitBot(th, "Pushing `"+branch+"` failed")
		}
	}
	// The pushes tried again meanwhile fail too, and are not told.
	failedPushes := func() int {
		threads, _ := e.m.DB.ActiveThreads(e.ctx)
		n := 0
		for _, rec := range threads {
			pushes, _ := e.m.DB.ThreadPushes(e.ctx, rec.ID)
			for _, p := range pushes {
				if p.Result != storage.PushOK {
					n++
				}
			}
		}
		return n
	}
	if err := waitFor(e, "more pushes tried while the remote is down", func() bool {
		return failedPushes() >= 4
	}); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(e, "the kept commits on the remote, without a next run", func() bool {
		names := fileNames(e.remote.Files(t, branch))
		return slices.Contains(names, "f2.txt") && slices.Contains(names, "f3.txt")
	}); err != nil {
		t.Fatalf("%v: the remote's branch has %v", err, fileNames(e.remote.Files(t, branch)))
	}
	pushedAfter := time.Since(back)
	e.waitBot(th, "f3.txt") // the push's notice names the files
	failed := e.countBot(th, "failed")
	if failed != 1 {
		t.Errorf("%d push failure notices while the remote was down, want one", failed)
	}
	for i, d := range answered {
		// An answer is posted before the push: not held by a remote that
		// refuses (nor by one that hangs: the push runs after it).
		if d > 30*time.Second {
			t.Errorf("answer %d came %s after its message", i+2, d)
		}
	}
	t.Logf("FIGURE git: 2 runs while the remote refused: answered after %v; %d push failure notice; kept commits pushed %s after the remote was back, with no run",
		roundAll(answered), failed, pushedAfter.Round(time.Millisecond))
}

func fileNames(files map[string]string) []string {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
