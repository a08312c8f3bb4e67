package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/ops/opstest"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// deputyFiles are the worktree files the bot itself reads, outside the
// sandbox: the instructions (before every prompt and by !status), the
// repository's MCP server list (when a thread opens, with mcp.repo_servers),
// a prompt template and a skill in each of the two skills folders (at every
// session start).
var deputyFiles = []string{"AGENTS.md", ".mcp.json", ".threadsmith/prompts/t.md", ".threadsmith/skills/s/SKILL.md", ".agents/skills/a.md"}

// TestBotIsNoConfusedDeputy plays the model against the bot's own reads.
// Through its bash tool (in the sandbox) the model plants, in place of every
// file the bot reads from the worktree, a link to what the bot may read and
// it may not (the config file, the database, /proc/self/environ, an SSH
// key), a named pipe, a link to /dev/zero and a 50 MB file; then the thread
// drives every read: !reset, !status, /t, /skill:s, /skill:a, a plain
// prompt, a restart of the bot. Nothing of a target may reach the model, the
// chat, the log or the session page; the thread is told in one line which
// files were left out; !status answers within a second; the bot stays up and
// another thread still runs. The session page's whole-output link gets the
// same plants in the scratch folder (which the sandbox shows read-only: the
// test plants there as an agent without a sandbox would).
func TestBotIsNoConfusedDeputy(t *testing.T) {
	// Not parallel: it bounds a wall time that tests running beside it
	// would stretch.
	sandboxtest.New(t, sandbox.Config{}) // or skip, saying why
	const (
		configMarker = "DEPUTY-CONFIG-SECRET-0f3a"
		keyMarker    = "DEPUTY-SSHKEY-SECRET-9b2e"
		dbMarker     = "SQLite format 3"
		bigMarker    = "DEPUTY-BIG-CONTENT"
	)
	// /proc/self/environ is the environment the process started with (a
	// variable set since is not in it): its longest entry stands for it.
	environ, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		t.Fatal(err)
	}
	envMarker := ""
	for _, kv := range strings.Split(string(environ), "\x00") {
		if len(kv) > len(envMarker) {
			envMarker = kv
		}
	}
	if len(envMarker) < 16 {
		t.Fatalf("no entry of /proc/self/environ is long enough to stand for it: %q", environ)
	}
	secrets := t.TempDir()
	configFile := filepath.Join(secrets, "config.yaml")
	keyFile := filepath.Join(secrets, "id_ed25519")
	if err := os.WriteFile(configFile, []byte("llm:\n  api_key: "+configMarker+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"+keyMarker+"\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	e := newSlackFakes(t, withConfig(func(c *config.Config) {
		// The ~30 runs' status messages are not what is tested: under
		// Slack's workspace budget for edits (50 a minute) and statuses
		// their last edits queue, and the restart's shutdown would wait its
		// whole grace on them. The fake Slack here enforces no limits.
		c.Slack.Rate.UpdatePerMinute = 600
		c.Slack.Rate.StatusPerMinute = 600
		c.MCP.RepoServers = true
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = "e2e-session-key-0123456789abcdef0123"
	}))
	logs := &syncBuffer{}
	e.logOut.w = logs
	db := filepath.Join(e.cfg.DataDir, "threadsmith.db")

	link := func(target string) string { return "ln -s " + target + " \"$1\"" }
	kinds := []struct{ name, plant string }{
		{"config", link(configFile)},
		{"database", link(db)},
		{"environ", link("/proc/self/environ")},
		{"sshkey", link(keyFile)},
		{"fifo", "mkfifo \"$1\""},
		{"devzero", link("/dev/zero")},
		{"big", "{ yes " + bigMarker + " | head -c 100000; } > \"$1\" && truncate -s 50M \"$1\""},
	}
	plantCmd := map[string]string{}
	for _, k := range kinds {
		plantCmd["plant "+k.name] = "set -e; mkdir -p .threadsmith/prompts .threadsmith/skills/s .agents/skills; plant() { rm -f \"$1\"; " + k.plant + "; }; " +
			"for f in " + strings.Join(deputyFiles, " ") + "; do plant \"$f\"; done; echo planted"
	}
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if last := r.Messages[len(r.Messages)-1]; last.Role == "tool" {
			return llmfake.TextReply("done with the tool")
		}
		u := lastUserText(r)
		for what, cmd := range plantCmd {
			if strings.HasSuffix(u, what) {
				args, _ := json.Marshal(map[string]string{"command": cmd})
				return llmfake.ToolCallReply(llmfake.Call{ID: "plant", Name: "bash", Args: string(args)})
			}
		}
		if strings.HasSuffix(u, "print rows") {
			return llmfake.ToolCallReply(llmfake.Call{ID: "rows", Name: "bash", Args: `{"command":"seq -f 'row %05g' 1 5000"}`})
		}
		return llmfake.TextReply("answer to: " + u)
	})
	e.start()

	// A channel a thread: Slack posts about one message a second in a
	// channel, which would otherwise set the pace of every answer.
	roots, chans := map[string]string{}, map[string]string{}
	for i, k := range kinds {
		chans[k.name] = fmt.Sprintf("C0DEPUTY%02d", i)
		roots[k.name] = e.slack.Mention(chans[k.name], aliceID, "plant "+k.name, "")
	}
	for _, k := range kinds {
		e.waitText(chans[k.name], roots[k.name], "done with the tool")
		e.waitText(chans[k.name], roots[k.name], "⏱")
	}
	// The thread is told once a session start which files were left out.
	notes := map[string]int{}
	countNotes := func(ch, root string) int { return strings.Count(e.threadText(ch, root), "was not read") }
	for _, k := range kinds {
		notes[k.name] = countNotes(chans[k.name], roots[k.name])
		e.slack.Mention(chans[k.name], aliceID, "!reset", roots[k.name])
	}
	for _, k := range kinds {
		root, ch := roots[k.name], chans[k.name]
		e.waitText(ch, root, "Started a new conversation")
		e.waitFor("the refusal note in "+k.name, func() bool { return countNotes(ch, root) > notes[k.name] },
			func() string { return e.transcript(ch, root) })
		want := "`.agents/skills/a.md` was not read: it is a "
		if k.name == "big" {
			want = "`.agents/skills/a.md` was not read: it is larger than 64 KB"
		}
		if text := e.threadText(ch, root); !strings.Contains(text, want) {
			t.Errorf("%s: the note does not say %q:\n%s", k.name, want, e.transcript(ch, root))
		}
	}
	for _, k := range kinds {
		root, ch := roots[k.name], chans[k.name]
		start := time.Now()
		e.slack.Mention(ch, aliceID, "!status", root)
		e.waitText(ch, root, "📊")
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: !status answered after %s", k.name, d)
		}
		if k.name != "big" && !strings.Contains(e.threadText(ch, root), "• Instructions: `AGENTS.md` was not read") {
			t.Errorf("%s: !status does not say why AGENTS.md was not read:\n%s", k.name, e.transcript(ch, root))
		}
	}
	// One prompt at a time in each thread (the threads run side by side).
	for _, p := range []string{"/t go", "/skill:s go", "/skill:a go", "hello there"} {
		for _, k := range kinds {
			e.slack.Mention(chans[k.name], aliceID, p, roots[k.name])
		}
		for _, k := range kinds {
			// Not expanded: the template and skills were not offered.
			e.waitText(chans[k.name], roots[k.name], "answer to: "+p)
		}
	}

	// A restart: every thread opens again (the MCP list is read then) and
	// starts its session again.
	e.stop()
	e.start()
	for _, k := range kinds {
		notes[k.name] = countNotes(chans[k.name], roots[k.name])
		e.slack.Mention(chans[k.name], aliceID, "after the restart", roots[k.name])
	}
	for _, k := range kinds {
		root, ch := roots[k.name], chans[k.name]
		e.waitText(ch, root, "answer to: after the restart")
		if countNotes(ch, root) <= notes[k.name] || !strings.Contains(e.threadText(ch, root), "MCP server list could not be used: .mcp.json was not read") {
			t.Errorf("%s: after a restart the thread is not told what was left out:\n%s", k.name, e.transcript(ch, root))
		}
	}

	// The session page's link to a command's whole output, with the file
	// it opens replaced by each plant.
	pageRoot := e.slack.Mention(slackChan, aliceID, "print rows", "")
	e.waitText(slackChan, pageRoot, "|full session>")
	m := pageLinkRe.FindStringSubmatch(e.threadText(slackChan, pageRoot))
	if m == nil {
		t.Fatalf("no session page link:\n%s", e.transcript(slackChan, pageRoot))
	}
	base := "http://" + e.m.HTTPAddr()
	_, body := opstest.Get(t, base+m[1])
	full := regexp.MustCompile(`href="(/s/\d+/full/[^"]+)"`).FindStringSubmatch(body)
	logsFound, _ := filepath.Glob(filepath.Join(e.cfg.DataDir, "scratch", "app", "*", "bash", "*.log"))
	if full == nil || len(logsFound) != 1 {
		t.Fatalf("the page links no whole output (%v):\n%.2000s", logsFound, body)
	}
	kept := logsFound[0]
	var pages []string
	for _, k := range kinds {
		if err := os.Remove(kept); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var err error
		switch k.name {
		case "fifo":
			err = syscall.Mkfifo(kept, 0o600)
		case "big":
			err = os.WriteFile(kept, bytes.Repeat([]byte(bigMarker+"\n"), 3<<20/len(bigMarker)), 0o600)
		default:
			target := map[string]string{"config": configFile, "database": db, "environ": "/proc/self/environ", "sshkey": keyFile, "devzero": "/dev/zero"}[k.name]
			err = os.Symlink(target, kept)
		}
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		code, page := opstest.Get(t, base+html.UnescapeString(full[1]))
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: the whole output's page answered after %s", k.name, d)
		}
		if k.name != "big" && code == http.StatusOK {
			t.Errorf("%s: the whole output's page opened what the agent planted (%d):\n%.300s", k.name, code, page)
		}
		if len(page) > 1<<20 {
			t.Errorf("%s: a page of %d bytes", k.name, len(page))
		}
		pages = append(pages, page)
	}

	// The bot is up and another thread runs.
	other := e.slack.Mention("C0DEPUTYZZ", aliceID, "are you still there", "")
	e.waitText("C0DEPUTYZZ", other, "answer to: are you still there")

	// Nothing of a target anywhere: the model's requests, the chat, the
	// log, the session pages.
	for _, k := range kinds {
		if _, link := pageLinkFor(e, chans[k.name], roots[k.name]); link != "" {
			_, p := opstest.Get(t, base+link)
			pages = append(pages, p)
		}
	}
	where := map[string]string{"log": logs.String(), "pages": strings.Join(pages, "\n")}
	var chat, model strings.Builder
	for _, k := range kinds {
		chat.WriteString(e.transcript(chans[k.name], roots[k.name]))
	}
	chat.WriteString(e.transcript(slackChan, pageRoot) + e.transcript("C0DEPUTYZZ", other))
	where["chat"] = chat.String()
	for _, r := range e.llm.Requests() {
		if len(r.Body) > 256<<10 {
			t.Errorf("a model request of %d bytes", len(r.Body))
		}
		model.Write(r.Body)
	}
	where["model"] = model.String()
	for w, text := range where {
		for _, secret := range []string{configMarker, envMarker, keyMarker, dbMarker, `\u0000\u0000\u0000\u0000`} {
			if strings.Contains(text, secret) {
				i := strings.Index(text, secret)
				t.Errorf("the %s holds %q: …%s…", w, secret, text[max(0, i-200):min(len(text), i+200)])
			}
		}
	}
	// The 50 MB AGENTS.md reaches the model as its first 32 KB, as any long
	// one does; the 50 MB template and skills do not reach it at all.
	for _, r := range e.llm.Requests() {
		for _, m := range r.Messages {
			if m.Role == "user" && strings.Contains(m.Content, bigMarker) {
				t.Errorf("a 50 MB skill or template reached the model as a message: %.200s", m.Content)
			}
		}
	}
}

func pageLinkFor(e *slackEnv, ch, root string) (string, string) {
	m := pageLinkRe.FindStringSubmatch(e.threadText(ch, root))
	if m == nil {
		return "", ""
	}
	return m[0], m[1]
}
